// The optional vision-model path: when the deployment configures an OpenAI-compatible endpoint
// (AI_BASE_URL / AI_API_KEY / AI_MODEL, passed in as ctx.ai), figures and images can be
// described by it. Any failure (network, status, shape, timeout) returns null and the caller
// keeps its own non-AI description, so the model is an improvement, never a dependency. A
// description the model did not write says so in the output (withoutVision), as the output's
// variant does (`standard`), and is priced as the work that ran (billing/pricing.ts).
import type { ConvertContext } from '../types.js';

const TIMEOUT_MS = 60_000;

export async function describeWithVision(
  ai: NonNullable<ConvertContext['ai']>, png: Buffer, prompt: string, signal: AbortSignal,
): Promise<string | null> {
  try {
    const res = await fetch(`${ai.baseUrl.replace(/\/+$/, '')}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(ai.apiKey ? { authorization: `Bearer ${ai.apiKey}` } : {}),
      },
      body: JSON.stringify({
        model: ai.model,
        max_tokens: 400,
        messages: [{
          role: 'user',
          content: [
            { type: 'text', text: prompt },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
          ],
        }],
      }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(TIMEOUT_MS)]),
    });
    if (!res.ok) return null;
    const body = await res.json() as { choices?: Array<{ message?: { content?: unknown } }> };
    const text = body.choices?.[0]?.message?.content;
    return typeof text === 'string' && text.trim() !== '' ? text.trim().replace(/\s*\n\s*/g, ' ') : null;
  } catch {
    signal.throwIfAborted();
    return null;
  }
}

/** Why a description is the converter's own and not the model's, for the note beside it. */
export function withoutVision(ai: ConvertContext['ai']): string {
  return ai ? 'the vision model did not answer' : 'no vision model is configured';
}
