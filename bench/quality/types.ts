// One line of the quality bench's table: what was measured, against which target.
export interface QualityRow {
  name: string;
  measured: string;
  target: string;
  pass: boolean;
}
