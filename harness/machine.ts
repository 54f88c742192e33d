import { spawnSync } from 'node:child_process';
import os from 'node:os';

/** What the figures were measured on: they mean little without it. */
export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  java: string;
  os: string;
  /** 1-minute load average: other work on the machine slows every measurement. */
  loadAverage: number;
}

export function describeMachine(): Machine {
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    java: javaVersion(),
    os: `${os.type()} ${os.release()} (${os.arch()})`,
    loadAverage: currentLoad(),
  };
}

export function currentLoad(): number {
  return os.loadavg()[0] ?? 0;
}

function javaVersion(): string {
  // `java -version` writes to stderr; DynamoDB Local runs on this JVM.
  const { stderr } = spawnSync('java', ['-version'], { encoding: 'utf8' });
  return stderr?.split('\n')[0]?.trim() || 'unknown';
}
