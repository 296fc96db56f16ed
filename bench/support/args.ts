/**
 * The benches' command-line reader: walks `--flag [value]` arguments and parses values with the
 * checks every bench needs, so each bench's parseArgs is just its switch over flags.
 *
 *   const a = new ArgReader(argv);
 *   for (let flag = a.nextFlag(); flag !== null; flag = a.nextFlag()) {
 *     switch (flag) { case '--num': num = a.positiveInteger(); break; ... }
 *   }
 */
export class ArgReader {
  private index = -1;
  private flag = '';

  constructor(private readonly argv: readonly string[]) {}

  /** The next argument, taken as a flag; null after the last. */
  nextFlag(): string | null {
    this.index++;
    if (this.index >= this.argv.length) return null;
    this.flag = this.argv[this.index];
    return this.flag;
  }

  /** The current flag's value (the argument after it). */
  value(): string {
    const v = this.argv[++this.index];
    if (v === undefined) throw new Error(`${this.flag} needs a value`);
    return v;
  }

  positiveInteger(): number {
    const v = this.value();
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${this.flag} must be a positive integer, got "${v}"`);
    return n;
  }

  positiveNumber(): number {
    const v = this.value();
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`${this.flag} must be positive, got "${v}"`);
    return n;
  }
}
