import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';
import { MAX_EVENTS_PER_REQUEST } from '../games.constants';
import { GameEventDto } from './game-event.dto';

function describe(errors: ValidationError[], path: string): string[] {
  return errors.flatMap((error) => Object.values(error.constraints ?? {}).map((message) => `${path}${message}`));
}

/**
 * A body of one event or an array of them, validated as a whole: one bad event refuses the request,
 * and each violation names the event it is about (`[3].type must be one of ...`).
 * ValidationPipe cannot do this: it sees `GameEventDto | GameEventDto[]` as a plain Object.
 */
@Injectable()
export class ParseEventsPipe implements PipeTransform<unknown, GameEventDto[]> {
  transform(body: unknown): GameEventDto[] {
    const many = Array.isArray(body);
    const items: unknown[] = many ? body : [body];
    if (items.length === 0 || items.length > MAX_EVENTS_PER_REQUEST) {
      throw new BadRequestException([`send 1 to ${MAX_EVENTS_PER_REQUEST} events per request, got ${items.length}`]);
    }
    const events: GameEventDto[] = [];
    const violations: string[] = [];
    items.forEach((item, i) => {
      const path = many ? `[${i}].` : '';
      if (item === null || typeof item !== 'object' || Array.isArray(item)) {
        violations.push(
          many ? `[${i}] must be an event object` : 'the body must be an event object or an array of them',
        );
        return;
      }
      const event = plainToInstance(GameEventDto, item);
      violations.push(...describe(validateSync(event, { whitelist: true, forbidNonWhitelisted: true }), path));
      events.push(event);
    });
    if (violations.length > 0) throw new BadRequestException(violations);
    return events;
  }
}
