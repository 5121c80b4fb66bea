// A one-line progress bar on a terminal (upload bytes, then pages converted); silent otherwise.
export class Progress {
  private phase = '';
  private done = 0;
  private total = 0;
  private drawn = false;

  constructor(private tty: boolean, private label: string) {}

  start(phase: string, total: number): void {
    this.phase = phase;
    this.done = 0;
    this.total = total;
    this.draw();
  }

  add(n: number): void {
    this.done += n;
    this.draw();
  }

  set(phase: string, done: number, total: number): void {
    this.phase = phase;
    this.done = done;
    this.total = total;
    this.draw();
  }

  end(): void {
    if (this.drawn) process.stdout.write('\n');
    this.drawn = false;
  }

  private draw(): void {
    if (!this.tty || this.total <= 0) return;
    const width = 30;
    const frac = Math.min(1, this.done / this.total);
    const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '.');
    const amount = this.phase === 'upload'
      ? `${(this.done / 1e6).toFixed(1)}/${(this.total / 1e6).toFixed(1)} MB`
      : `${this.done}/${this.total} pages`;
    process.stdout.write(`\r${this.label} ${this.phase} [${bar}] ${Math.round(frac * 100)}% ${amount}  `);
    this.drawn = true;
  }
}
