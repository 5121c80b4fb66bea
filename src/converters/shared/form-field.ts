// What a line of a form looks like, for the converters that decide what a line is (the PDF text
// layer's and OCR's Markdown alike): a label and its value are a line of text, never a heading.

/** A form line: a short label ending in a colon, then its value ("Report ID: SPARSE-1234"). */
export const FORM_FIELD_RE = /^[\p{L}][\p{L}\d ./#&()'-]{0,30}:\s+\S/u;
