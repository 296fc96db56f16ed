/**
 * Child process for the lock tests: takes the LOCK of the directory given as argv[2], prints
 * "locked" and waits to be killed (the parent uses SIGKILL, so the LOCK is left behind).
 */
import { DbLock } from '../../src/engine/lockFile';

DbLock.acquire(process.argv[2]);
process.stdout.write('locked\n');
setInterval(() => undefined, 1000);
