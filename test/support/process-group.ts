/** Whether any process of the group led by `pid` is still alive (signal 0 only checks). */
export function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}
