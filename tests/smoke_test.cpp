#include <gtest/gtest.h>
#include "tonnx/symbolic.h"
TEST(Smoke, RegistryHasRelu) { EXPECT_NE(tonnx::find_symbolic("aten::relu", 17), nullptr); }
