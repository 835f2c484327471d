/* key_dtor: for a Python program (through ctypes.CDLL), a C library that keeps state for the
 * threads other than the main one in a pthread key whose destructor, run as such a thread ends,
 * calls into Python (PyGILState_Ensure and Release, found in the process that loads it) without
 * asking whether the interpreter is still up. On the main thread it keeps nothing, so that the
 * destructor never runs after Py_FinalizeEx in a program without the library. */
#include <pthread.h>
#include <unistd.h>

extern int PyGILState_Ensure(void);
extern void PyGILState_Release(int);

static pthread_key_t key_dtor_key;
static pthread_once_t key_dtor_once = PTHREAD_ONCE_INIT;

static void
key_dtor_run(void *value)
{
	(void)value;
	PyGILState_Release(PyGILState_Ensure());
}

static void
key_dtor_make(void)
{
	pthread_key_create(&key_dtor_key, key_dtor_run);
}

/* Keeps state for the calling thread, unless it is the main one. */
__attribute__((visibility("default"))) void
key_dtor_arm(void)
{
	if (gettid() == getpid())
		return;
	pthread_once(&key_dtor_once, key_dtor_make);
	pthread_setspecific(key_dtor_key, &key_dtor_key);
}
