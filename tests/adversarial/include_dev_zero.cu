// attack: #include "/dev/zero": an endless input to the preprocessor (memory or time limit must stop it)
// task: dev/saxpy_f32
// expect: compile_error
// expect-flags: -
#include "/dev/zero"
extern "C" void saxpy(int n, float a, const float *x, float *y) {}
