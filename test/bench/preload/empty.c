/* empty: a shared object with nothing in it, preloaded by figure 5 of `make bench` to measure
 * what any LD_PRELOAD costs a short program (open, map, relocate), the floor under roundtrim's
 * own start-up cost. */
int rt_bench_empty_preload;
