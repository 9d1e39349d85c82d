/*
 * ukernel_main.c - the micro-kernel tests' runner.  The configs come from
 * ukernel_list.h, which the Makefile writes from configs/test/: KERNEL(name)
 * per config, each config's tests in ukernel_tests_<name>()
 * (tests/gen_ukernel_tests.lua), run by the testers of tests/ukernel.c.
 * The exit status is 1 on any failure or when nothing ran.
 */
#include "ukernel.h"

#define KERNEL(name) int ukernel_tests_##name(int *passed, int *failed);
#include "ukernel_list.h"
#undef KERNEL

int main(void)
{
    int passed = 0, failed = 0;
    ukt_start();
#define KERNEL(name) ukernel_tests_##name(&passed, &failed);
#include "ukernel_list.h"
#undef KERNEL
    return ukt_summary(passed, failed);
}
