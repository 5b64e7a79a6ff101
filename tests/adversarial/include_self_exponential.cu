// attack: include bomb: the file includes itself twice per level, 2^200 inclusions before the depth limit, so only the compile timeout stops it
// task: dev/saxpy_f32
// expect: compile_error
// expect-flags: -
#include __FILE__
#include __FILE__
extern "C" void saxpy(int n, float a, const float *x, float *y) {}
