import { cronProblem } from './cron';

describe('cronProblem', () => {
  it('accepts five and six fields, ranges, steps, names and macros', () => {
    for (const cron of ['*/5 * * * *', '0 */5 * * * *', '0 9 * * mon-fri', '0 0 1 jan *', '@daily'])
      expect(cronProblem(cron)).toBeUndefined();
  });

  it.each([
    ['0 eve * * *', 'its hour field "eve" is not valid (0-23'],
    ['0 0 25 * * *', 'its hour field "25" is not valid'],
    ['0 0 0 32 * *', 'its day-of-month field "32" is not valid (1-31'],
    ['0 0 * * 8', 'its day-of-week field "8" is not valid (0-7 or sun-sat'],
    ['0 */0 * * *', 'its hour field "*/0" is not valid'],
    ['61 * * * *', 'its minute field "61" is not valid'],
  ])('names the wrong field of %s', (cron, said) => {
    expect(cronProblem(cron)).toContain(said);
  });

  it('says how many fields a cron takes when the count is wrong', () => {
    expect(cronProblem('* * * *')).toBe(
      `cron "* * * *" has 4 fields: give six fields with seconds ('0 */5 * * * *') or five without ('*/5 * * * *')`,
    );
    expect(cronProblem('* * * * * * *')).toContain('has 7 fields');
  });

  it('blames the time zone when the expression is fine', () => {
    expect(cronProblem('* * * * *', 'Nowhere/Atlantis')).toBe(
      `tz "Nowhere/Atlantis" is not an IANA time zone name (such as 'Europe/Paris')`,
    );
  });

  it('never repeats the cron package’s own words', () => {
    expect(cronProblem('0 eve * * *')).not.toMatch(/Unknown alias/);
  });
});
