/** User plus system time of a `/proc/…/stat` file, in clock ticks; throws where the file does not exist. */
export declare function cpuTicksOf(statFile: string): number;
/** The calling thread's CPU time so far in ms, from its scheduler statistics (ns); undefined without /proc. */
export declare function threadCpuMs(): number | undefined;
/** One clock tick in ms (`getconf CLK_TCK`, 100 a second where it cannot say), asked once per thread. */
export declare function msPerTick(): number;
