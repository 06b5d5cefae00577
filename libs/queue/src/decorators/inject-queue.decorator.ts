import { Inject } from '@nestjs/common';
import { getDelayQueueToken, getFixedQueueToken } from '../queue.constants';

/** Injects the FixedQueue registered under `name` with `QueueModule.registerFixedQueue`. */
export const InjectFixedQueue = (name: string): ParameterDecorator & PropertyDecorator =>
  Inject(getFixedQueueToken(name));

/** Injects the DelayQueue registered under `name` with `QueueModule.registerDelayQueue`. */
export const InjectDelayQueue = (name: string): ParameterDecorator & PropertyDecorator =>
  Inject(getDelayQueueToken(name));
