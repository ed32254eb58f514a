// The one Node API the Worker uses (compatibility flag nodejs_als): AsyncLocalStorage, for the
// invocation meter (src/lib/meter.ts). Declared here rather than pulling Node's types into the Worker's.
declare module "node:async_hooks" {
  export class AsyncLocalStorage<T> {
    getStore(): T | undefined;
    run<R>(store: T, callback: () => R): R;
  }
}
