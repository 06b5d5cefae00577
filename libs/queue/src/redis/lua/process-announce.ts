import type { ScriptProtocol } from '../script-protocol';

/** A process of the application as it announced itself under the prefix. */
export interface AnnouncedProcess {
  id: string;
  /** The library's version in that process. */
  version: string;
  /** The data contract it speaks: what its scripts write and read. */
  contract: number;
  /** The lowest contract it works beside. */
  serves: number;
  startedAt: number;
  /** Redis time of its last announcement. */
  seenAt: number;
}

export interface Announcement {
  id: string;
  version: string;
  contract: number;
  serves: number;
  startedAt: number;
  leaving: boolean;
  leaseMs: number;
}

/** Announces a process and lists the live ones (see process-announce.lua). */
export const processAnnounce: ScriptProtocol<
  'process-announce',
  Announcement,
  { now: number; live: AnnouncedProcess[] },
  { processes: string }
> = {
  script: 'process-announce',
  keys: (keys) => [keys.processes],
  args: ({ id, version, contract, serves, startedAt, leaving, leaseMs }) => [
    id,
    `${version}|${contract}|${serves}|${startedAt}`,
    leaving ? 1 : 0,
    leaseMs,
  ],
  decode: (reply) => {
    const [now, ...pairs] = reply as [number, ...string[]];
    const live: AnnouncedProcess[] = [];
    for (let i = 0; i < pairs.length; i += 2) {
      const [version, contract, serves, startedAt, seenAt] = pairs[i + 1].split('|');
      live.push({
        id: pairs[i],
        version,
        contract: Number(contract),
        serves: Number(serves),
        startedAt: Number(startedAt),
        seenAt: Number(seenAt),
      });
    }
    return { now: Number(now), live };
  },
};
