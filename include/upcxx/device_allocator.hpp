#pragma once
/// \file
// UPC++ installs one header per component; a program may include this one
// alone. All of UPC++ on accrete is one header (docs/upcxx.md).
#include <upcxx/upcxx.hpp>
