#pragma once
// Umbrella header: the whole accrete runtime.
#include "accrete/collectives.hpp"
#include "accrete/error.hpp"
#include "accrete/future.hpp"
#include "accrete/global_ptr.hpp"
#include "accrete/progress.hpp"
#include "accrete/promise.hpp"
#include "accrete/rma.hpp"
#include "accrete/runtime.hpp"
#include "accrete/segment.hpp"
#include "accrete/team.hpp"
