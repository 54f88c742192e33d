import { Script } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { CONSOLE_PAGE, CONSOLE_SCRIPT, CONSOLE_STYLE } from '../../cli/console-page.js';

// The console's assets (docs/console.md), without a browser: the script compiles, and the page
// loads nothing but its own script and style (test/console/console.test.ts drives it in Chromium).

describe("the console's page", () => {
  it('has a script that compiles', () => {
    expect(() => new Script(CONSOLE_SCRIPT, { filename: 'console.js' })).not.toThrow();
  });

  it('loads its own script and style only, nothing inline, nothing from elsewhere', () => {
    const sources = [...CONSOLE_PAGE.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
    expect(sources.sort()).toEqual(['/console.css', '/console.js']);
    expect(CONSOLE_PAGE).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(CONSOLE_PAGE).not.toMatch(/\bstyle=|<style/);
    expect(`${CONSOLE_SCRIPT}${CONSOLE_STYLE}`).not.toMatch(/https?:\/\//);
  });
});
