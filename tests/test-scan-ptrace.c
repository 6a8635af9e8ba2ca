#include "tests-util.h"
static void test_stub(void) { g_test_skip("not written yet"); }
int main(int argc, char **argv) { g_test_init(&argc, &argv, NULL); g_test_add_func("/stub", test_stub); return g_test_run(); }
