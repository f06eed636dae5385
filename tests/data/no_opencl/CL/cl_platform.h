/* A stand-in for <CL/cl_platform.h> on the include path of tests/integration/no_opencl.sh (make
 * check-no-opencl): a source of manta-profile, manta-infer, the engine or its tests that
 * includes an OpenCL header, directly or through a header of manta, stops here. */
#error "an OpenCL header (<CL/cl_platform.h>) reached a source that must build without OpenCL"
