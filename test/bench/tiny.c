/* tiny: a program that does next to nothing, for measuring what a preloaded library adds to the
 * start-up and exit of short programs (the sleep, cat and kill of NVFlare's watchdog loop). */
int
main(void)
{
	return 0;
}
