/**
 * A value one module provides to another that must not import it: a module OncelyPipeline injects
 * into a bundle (esbuild's `inject`) provides it, so that a bundle without that module carries none
 * of what it imports (the Valkey store's scripts, iovalkey). Kept on `globalThis` under `name`, so
 * that a bundle holding two copies of the reading module still shares the one provided.
 */
export function providedModule<T>(name: string) {
  const key = Symbol.for(name);
  const scope = globalThis as typeof globalThis & { [key]?: T };
  return {
    /** Provides `value` (or, with `undefined`, withdraws it); returns the previous one. */
    provide(value: T | undefined): T | undefined {
      const previous = scope[key];
      scope[key] = value;
      return previous;
    },
    /** What was provided, if anything. */
    get(): T | undefined {
      return scope[key];
    },
  };
}
