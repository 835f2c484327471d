// gil_guard: a C++ op in pybind11's style for test_python.c: the GIL released around the work by
// an RAII guard whose destructor (noexcept, as every C++ destructor) takes it back, as
// pybind11::gil_scoped_release does around every PyTorch op. Loaded with ctypes.PyDLL (the
// caller holds the GIL): the two calls are the interpreter's, found when it loads this object.
#include <unistd.h>

extern "C" void *PyEval_SaveThread(void);
extern "C" void PyEval_RestoreThread(void *);

namespace {
struct gil_scoped_release {
	void *state;
	gil_scoped_release() : state(PyEval_SaveThread()) {}
	~gil_scoped_release() { PyEval_RestoreThread(state); }
};
} // namespace

extern "C" __attribute__((visibility("default"))) void
gil_guard_work(unsigned ms)
{
	gil_scoped_release no_gil;
	usleep(ms * 1000);
}
