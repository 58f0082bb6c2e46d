#!/bin/sh
# expect_output.sh nonzero|zero REGEX CMD...: runs CMD, prints its output,
# and passes only if its exit status is as expected AND the output matches
# REGEX (grep -E). Why: CTest's PASS_REGULAR_EXPRESSION ignores the exit
# status, so a test could pass on a message alone.
want=$1; regex=$2; shift 2
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out"
if [ "$want" = zero ] && [ $rc -ne 0 ]; then echo "expect_output: exit status $rc, wanted 0"; exit 1; fi
if [ "$want" = nonzero ] && [ $rc -eq 0 ]; then echo "expect_output: exit status 0, wanted non-zero"; exit 1; fi
printf '%s\n' "$out" | grep -Eq "$regex" || { echo "expect_output: no line matches '$regex'"; exit 1; }
echo "expect_output: exit status $rc and output as expected"
