import { Type } from 'class-transformer';
import { IsIn, IsInt, IsNumber, IsOptional, IsString, Length, Matches, Min } from 'class-validator';

export const EVENT_TYPES = ['session_start', 'level_up', 'purchase', 'session_end', 'ad_view', 'heartbeat'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Nobody needs these within the second: they go to the scheduled digest, not the live reporter. */
export const DIGEST_TYPES: ReadonlySet<EventType> = new Set<EventType>(['ad_view', 'heartbeat']);

const GAME_PACKAGE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const GAME_RULE = {
  message: 'game must be a package name such as com.example.game: 1-128 letters, digits, ".", "_" or "-"',
};

/** A behaviour event as a client sends it. */
export class GameEventDto {
  @IsIn(EVENT_TYPES)
  type!: EventType;

  @IsString()
  @Length(1, 64)
  userId!: string;

  /** When it happened, epoch ms; the time it was received when absent. */
  @IsOptional()
  @IsInt()
  @Min(0)
  ts?: number;

  /** What the type says: the level reached, the amount paid, ... */
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  value?: number;
}

/** An event as it travels through the queues to the upstream: stamped with its game, time and number. */
export class GameEvent {
  @Matches(GAME_PACKAGE, GAME_RULE)
  game!: string;

  /** The producer run that numbered it (see GameSequences). */
  @Matches(/^[0-9a-f]{8}$/, { message: 'run must be 8 hexadecimal digits' })
  run!: string;

  /** Its place in the game's events of its kind (live or digest) from this run: 1, 2, 3, ... */
  @IsInt()
  @Min(1)
  seq!: number;

  @IsIn(EVENT_TYPES)
  type!: EventType;

  @IsString()
  @Length(1, 64)
  userId!: string;

  @IsInt()
  @Min(0)
  ts!: number;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  value?: number;
}

export class GameParams {
  @Matches(GAME_PACKAGE, GAME_RULE)
  game!: string;
}

export class StatsQuery {
  /** Only the games that received the most events. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  top?: number;
}
