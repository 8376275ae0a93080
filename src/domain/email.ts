/**
 * What an account's email address must look like: the one rule for every way an account is made (the
 * command line, the settings screen, a dataset file). Deliberately loose: the mail system is the judge.
 */
const EMAIL_ADDRESS = /^[^\s@]+@[^\s@]+$/;

export function isEmailAddress(value: string): boolean {
  return EMAIL_ADDRESS.test(value);
}
