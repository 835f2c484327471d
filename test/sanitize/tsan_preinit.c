/* Linked into the workloads of make check-tsan. Debian 12's shared TSan runtime needs
 * libstdc++, whose constructor runs before the runtime's own and calls the runtime's
 * __cxa_atexit interceptor, which then jumps to an unset pointer: even a program built with
 * -fsanitize=thread -shared-libsan crashes before main. An executable's .preinit_array runs
 * before every constructor, so the runtime is initialised first. */
void __tsan_init(void);

__attribute__((section(".preinit_array"),
               used)) static void (*const tsan_preinit)(void) = __tsan_init;
