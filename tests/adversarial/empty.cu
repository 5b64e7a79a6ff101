// attack: an empty candidate (nothing after this header)
// task: dev/saxpy_f32
// expect: invalid
// expect-flags: -
