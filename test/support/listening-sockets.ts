import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** A TCP socket in LISTEN state, with the process that holds it. */
export interface ListeningSocket {
  pid: number;
  /** The local address as Linux writes it, e.g. `127.0.0.1`, `::ffff:127.0.0.1`, `0.0.0.0`, `::`. */
  address: string;
  port: number;
}

/**
 * The TCP sockets that `pid` and every process descended from it listen on, from /proc (Linux): each
 * process's socket inodes, looked up in /proc/net/tcp and tcp6.
 */
export function listeningSocketsOf(pid: number): ListeningSocket[] {
  const listening = new Map<string, { address: string; port: number }>();
  for (const [file, v6] of [
    ['/proc/net/tcp', false],
    ['/proc/net/tcp6', true],
  ] as const) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [local, state, inode] = [fields[1], fields[3], fields[9]];
      // State 0A is LISTEN.
      if (!local || state !== '0A' || !inode) continue;
      const [hexAddress = '', hexPort = ''] = local.split(':');
      listening.set(inode, {
        address: v6 ? ipv6(hexAddress) : ipv4(hexAddress),
        port: Number.parseInt(hexPort, 16),
      });
    }
  }
  const sockets: ListeningSocket[] = [];
  for (const each of [pid, ...descendantsOf(pid)]) {
    for (const inode of socketInodesOf(each)) {
      const socket = listening.get(inode);
      if (socket) sockets.push({ pid: each, ...socket });
    }
  }
  return sockets;
}

/** Whether `address` (as {@link ListeningSocket} gives it) reaches this machine only. */
export function isLoopback(address: string): boolean {
  return /^127\./.test(address) || address === '::1' || /^::ffff:127\./.test(address);
}

function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // The command name, in parentheses, may hold spaces: the parent's pid is the second field after it.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const pending = [pid];
  while (pending.length > 0) {
    for (const child of children.get(pending.pop() as number) ?? []) {
      found.push(child);
      pending.push(child);
    }
  }
  return found;
}

function socketInodesOf(pid: number): string[] {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  const inodes: string[] = [];
  for (const fd of fds) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match?.[1]) inodes.push(match[1]);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/** /proc/net/tcp's address: 4 bytes in host (little-endian) order. */
function ipv4(hex: string): string {
  return [6, 4, 2, 0].map((at) => Number.parseInt(hex.slice(at, at + 2), 16)).join('.');
}

/** /proc/net/tcp6's address: four 32-bit words, each in host (little-endian) order. */
function ipv6(hex: string): string {
  const bytes = Buffer.alloc(16);
  for (let word = 0; word < 4; word++) {
    bytes.writeUInt32BE(Buffer.from(hex.slice(word * 8, word * 8 + 8), 'hex').readUInt32LE(0), word * 4);
  }
  const v4Mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes.readUInt16BE(10) === 0xffff;
  if (v4Mapped) return `::ffff:${[...bytes.subarray(12)].join('.')}`;
  const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16));
  const text = groups.join(':');
  if (text === '0:0:0:0:0:0:0:0') return '::';
  if (text === '0:0:0:0:0:0:0:1') return '::1';
  return text;
}
