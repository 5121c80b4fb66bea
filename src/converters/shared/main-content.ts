// The main content of a web page, for html-to-md's `mainContent` option: Mozilla's Readability
// (Firefox's reader view) finds the article and leaves out navigation, headers, footers,
// sidebars, banners and link lists. It answers the article's title and HTML, or says why the
// page is to be converted whole: Readability does not take it for an article (a short page, a
// form, a list of links), finds nothing, fails, or the page is past the limits below.
//
// Readability runs on a linkedom copy of the page: domino (turndown's DOM, which parsed the page)
// lacks parts of the DOM Readability uses, and linkedom's own parser does not build the implied
// <html>/<head>/<body> of a page that omits them, so the copy is parsed from domino's
// serialization of the tree it built.
//
// Limits: Readability's passes re-read the text and links under each element, so its work grows
// with the sum of the elements' depths (each element is read once per ancestor), and every
// element costs a fixed amount more when it retries with looser rules. Pages nested deeper than
// maxDepth or whose estimate is past maxWork are converted whole: the cost stays linear in the
// size of the page, whatever its shape.
import { createRequire } from 'node:module';

type Readability = typeof import('@mozilla/readability');
type Linkedom = typeof import('linkedom');

const require = createRequire(import.meta.url);
let libs: (Readability & Pick<Linkedom, 'parseHTML'>) | undefined;

/** Loaded on first use: linkedom takes a quarter of a second to load, which conversions without
 *  main_content (Word, most HTML) need not pay in every pool thread. */
function load(): Readability & Pick<Linkedom, 'parseHTML'> {
  libs ??= { ...(require('@mozilla/readability') as Readability), parseHTML: (require('linkedom') as Linkedom).parseHTML };
  return libs;
}

/** The slice of domino's document this step reads. */
export interface SourceElement {
  outerHTML: string;
  firstElementChild: SourceElement | null;
  nextElementSibling: SourceElement | null;
}

export const MAIN_CONTENT_LIMITS = {
  /** Deepest element nesting Readability is given (real pages: 10 to 40; past 100 its cost per
   *  element keeps growing with the depth). */
  maxDepth: 100,
  /** Σ over elements of (DEPTH_WEIGHT × depth + ELEMENT_WEIGHT). A 0.9 MB reference page of 16,000
   *  elements is 0.7 M, a 1.9 MB book of 24,500 elements 0.95 M, a 4.4 MB manual of 89,000
   *  elements 3.9 M. */
  maxWork: 2_000_000,
};
// Measured on real pages and on hostile shapes (deep divs, nested tables and lists, flat link
// lists, 64 and 97 deep): Readability's time per unit of this estimate stays within a factor of 3.
const DEPTH_WEIGHT = 2;
const ELEMENT_WEIGHT = 20;

export type MainContent =
  | { found: true; title: string; html: string }
  | { found: false; reason: 'too-deep' | 'too-large' | 'not-an-article' | 'no-article' | 'failed' };

/**
 * The article of the page whose root element (domino's <html>) is `root`; `base` is the resolved
 * address of the page, for Readability's own link resolution.
 */
export function mainContent(root: SourceElement, base: string | undefined, limits = MAIN_CONTENT_LIMITS): MainContent {
  const over = overLimits(root, limits);
  if (over) return { found: false, reason: over };
  const { parseHTML, isProbablyReaderable, Readability } = load();
  try {
    const { document } = parseHTML(root.outerHTML);
    if (base) {
      // Readability resolves relative links against these; linkedom leaves them unset.
      Object.defineProperty(document, 'baseURI', { value: base });
      Object.defineProperty(document, 'documentURI', { value: base });
    }
    if (!isProbablyReaderable(document as never)) return { found: false, reason: 'not-an-article' };
    // keepClasses: code blocks carry their language in class names (language-ts).
    const article = new Readability(document as never, { keepClasses: true }).parse();
    if (!article?.content || !article.textContent?.trim()) return { found: false, reason: 'no-article' };
    return { found: true, title: (article.title ?? '').replace(/\s+/g, ' ').trim(), html: article.content };
  } catch {
    // A DOM corner Readability trips on: the page is converted whole rather than failed.
    return { found: false, reason: 'failed' };
  }
}

/** One walk of the tree: the first limit the page passes, if any. */
function overLimits(root: SourceElement, limits: typeof MAIN_CONTENT_LIMITS): 'too-deep' | 'too-large' | undefined {
  let work = 0;
  const stack: Array<[SourceElement, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [el, depth] = stack.pop()!;
    if (depth > limits.maxDepth) return 'too-deep';
    work += DEPTH_WEIGHT * depth + ELEMENT_WEIGHT;
    if (work > limits.maxWork) return 'too-large';
    for (let c = el.firstElementChild; c; c = c.nextElementSibling) stack.push([c, depth + 1]);
  }
  return undefined;
}
