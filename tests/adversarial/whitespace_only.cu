// attack: a candidate of only blank lines, tabs and spaces
// task: dev/saxpy_f32
// expect: invalid
// expect-flags: -

   
		

