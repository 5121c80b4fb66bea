// The scenarios, in the order the bench runs them (`npm run bench -- B` runs one).
import type { Scenario } from '../types.js';
import { cheapPath } from './a-cheap.js';
import { pdf } from './b-pdf.js';
import { ocr } from './c-ocr.js';
import { word } from './d-word.js';
import { saturation } from './e-saturation.js';
import { uploads } from './f-uploads.js';
import { memory } from './g-memory.js';

export const SCENARIOS: Scenario[] = [cheapPath, pdf, ocr, word, saturation, uploads, memory];
