// The OCR languages docpipe ships, apart from the OCR engine so the edge can check a request's
// `languages` without loading tesseract.js: ISO 639-2/T codes as tesseract names its models,
// each read from its @tesseract.js-data/<code> npm package.
export const OCR_LANGUAGES = ['eng', 'deu', 'fra', 'spa', 'ita', 'por', 'nld', 'ara', 'heb', 'chi_sim', 'jpn'] as const;
export type OcrLanguage = (typeof OCR_LANGUAGES)[number];
export const DEFAULT_OCR_LANGUAGES: readonly OcrLanguage[] = ['eng'];
