// Runs an async refresh so that bursts of triggers (stopped, invalidated and
// focus often arrive together) cause at most one extra run, never overlapping
// runs that could apply stale replies after fresh ones.

export class Coalescer {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly run: () => Promise<void>) {}

  /** Resolves once a run that started after this call has finished. */
  request(): Promise<void> {
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.run();
      } catch {
        // The run reports its own errors; a failed refresh must not stop later ones.
      }
    } while (this.again);
  }
}
