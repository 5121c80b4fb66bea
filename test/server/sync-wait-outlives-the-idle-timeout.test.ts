// A synchronous submit keeps its connection while it waits for its conversion, however long past
// uWS's idle timeout (10 s, fixed in uWS: HTTP_IDLE_TIMEOUT_S) the wait lasts: the body reader
// pauses the socket of a request still unanswered a moment after its body arrived (which clears
// the timeout) and must not re-arm the timeout. Here the converter is held for longer than the
// idle timeout, then released: the client gets its 200 with the content. Multipart bodies large
// enough to outrun the disk are paused and resumed while they are read (uWS's resume re-arms the
// timeout); a small JSON body is not.
// One world mode: the store plays no part in the connection's life.
import t from 'tap';
import { HeldExecutor, MODES, startWorld } from '../helpers/world.js';

interface FileJ { id: string; role: string; format: string | null; content: string | null; links: { content: string } }
interface ConvJ { id: string; status: string; files: FileJ[] }

/** Past uWS's idle timeout (10 s) with room to spare: this is a wait, not a measurement. */
const PAST_IDLE_TIMEOUT_MS = 13_000;

t.test(`a sync wait outlives the idle timeout (${MODES[0]})`, async (t) => {
  // Holds its tasks without reporting itself full: the second submit must wait like the first,
  // not be answered 202 capacity because the first one's task is waiting.
  const held = Object.assign(new HeldExecutor(), { saturated: () => false });
  const w = await startWorld(MODES[0]!, {}, { executor: held });
  t.teardown(() => w.close());

  // Both sizes wait at once, in one pass past the idle timeout (the wait is the test's cost).
  const cases = [['a small file', 200_000, 'multipart'], ['a file larger than the held body (1 MiB)', 1_500_000, 'multipart'],
    ['a small JSON body', 2_000, 'json']] as const;
  held.hold();
  const submits = cases.map(([label, size, as]) => {
    const line = 'plain words in a long text file\n';
    const text = `first line ${label}\n${line.repeat(Math.ceil(size / line.length))}last line\n`;
    const fd = new FormData();
    fd.append('file', new Blob([text], { type: 'text/plain' }), 'long.txt');
    const sent = { label, answered: false, res: undefined as Promise<Response> | undefined };
    sent.res = w.req('POST', '/v1/convert/text?wait=60', as === 'multipart' ? { body: fd } : { json: { text } })
      .then((r) => { sent.answered = true; return r; }, (e: unknown) => { sent.answered = true; throw e; });
    sent.res.catch(() => {}); // awaited below; a rejection before then is not unhandled
    return sent;
  });
  while (held.waitingTasks < cases.length) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, PAST_IDLE_TIMEOUT_MS));
  const answeredWhileHeld = submits.map((s) => s.answered);
  held.release();

  for (const [i, sent] of submits.entries()) {
    await t.test(sent.label, async (t) => {
      t.notOk(answeredWhileHeld[i], 'no answer (nor a closed connection) while the conversion is held');
      const res = await sent.res!;
      t.equal(res.status, 200, 'answered 200 once the conversion finished');
      const c = await res.json() as ConvJ;
      t.equal(c.status, 'completed');
      const md = c.files.find((f) => f.role === 'output' && f.format === 'markdown')!;
      const content = md.content ?? await (await w.req('GET', md.links.content)).text();
      t.ok(content.startsWith(`first line ${sent.label}`), 'the output has the text\'s first line');
      t.ok(content.trimEnd().endsWith('last line'), 'and its last');
    });
  }
});
