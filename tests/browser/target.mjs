// Runs leak_target for the browser test: starts it, reads its port, sends it stdin commands
// and waits for their answers; finds its two leaking lines from the "LEAK:" markers.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const SOURCE = new URL('./leak_target.cpp', import.meta.url);

// {grow: line, cache: line}, from the markers in leak_target.cpp.
export function leakLines() {
  const lines = readFileSync(SOURCE, 'utf8').split('\n');
  const find = (marker) => lines.findIndex((l) => l.includes(`// LEAK:${marker}`)) + 1;
  return { grow: find('grow'), cache: find('cache') };
}

export class Target {
  // `env`: more environment variables ({LIVEHEAP_HISTORY_INTERVAL: '1'}).
  static async start(program, args = [], env = {}) {
    const target = new Target(program, args, { ...process.env, ...env });
    target.port = Number((await target.expect(/^port (\d+)$/))[1]);
    return target;
  }

  // `env`: the program's whole environment (default: ours).
  constructor(program, args, env = process.env) {
    this.child = spawn(program, args, { stdio: ['pipe', 'pipe', 'inherit'], env });
    this.lines = [];
    this.waiters = [];
    this.exited = new Promise((resolve) => this.child.on('exit', resolve));
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      this.lines.push(line);
      this.wake();
    });
    this.child.on('exit', (code, signal) => {
      this.lines.push(`exited ${code ?? signal}`);
      this.wake();
    });
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  // The first unread output line matching `pattern` (its match), within `ms`.
  expect(pattern, ms = 20000) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => { done(); reject(new Error(`leak_target: no line matching ${pattern} in ${ms} ms; saw ${JSON.stringify(this.lines)}`)); }, ms);
      const check = () => {
        while (this.lines.length) {
          const line = this.lines.shift();
          const match = line.match(pattern);
          if (match) { done(); resolve(match); return; }
          if (line.startsWith('exited')) { done(); reject(new Error(`leak_target ${line}`)); return; }
        }
      };
      const done = () => { clearTimeout(timer); this.waiters = this.waiters.filter((w) => w !== check); };
      this.waiters.push(check);
      check();
    });
  }

  // Sends a command; resolves to the tick count the program reports after it.
  async send(command) {
    this.child.stdin.write(`${command}\n`);
    const match = await this.expect(new RegExp(`^ok ${command} ticks=(\\d+)$`));
    return Number(match[1]);
  }

  async kill() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}
