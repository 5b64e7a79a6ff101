// attack: a candidate that is nothing but a comment: compiles to an empty library, so the entry is missing
// task: dev/saxpy_f32
// expect: wrong
// expect-flags: -
/* extern "C" void saxpy(int n, float a, const float *x, float *y) { } */
