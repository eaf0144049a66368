/**
 * Operational errors of trace output to memory (SDM Vol. 3C §33.2.7.1 "Single-Range
 * Output Errors", §33.2.7.2 "ToPA Errors", §33.3.10). They are not faults: the
 * processor sets IA32_RTIT_STATUS.Error, which clears TriggerEn and stops packet
 * generation; packets still in internal buffers are lost.
 */
export const OutputError = {
  /** Single range: MaskOrTableOffset has a 0 below its most significant 1. */
  MaskNotContiguous: "mask-not-contiguous",
  /** Single range: IA32_RTIT_OUTPUT_BASE & IA32_RTIT_OUTPUT_MASK_PTRS[31:0] > 0. */
  BaseMaskOverlap: "base-mask-overlap",
  /** Single range: OutputOffset > IA32_RTIT_OUTPUT_MASK_PTRS[31:0]. */
  OffsetBeyondMask: "offset-beyond-mask",
  /** ToPA: a reserved bit of an entry is set (bits 1, 3, 5, 11:10). */
  EntryReserved: "entry-reserved",
  /** ToPA: an entry's address sets bits at or above MAXPHYADDR. */
  EntryAboveMaxPhysAddr: "entry-above-maxphysaddr",
  /** ToPA: the table base (from IA32_RTIT_OUTPUT_BASE) is not 4 KiB aligned. */
  TableMisaligned: "table-misaligned",
  /** ToPA: an output entry's base is not aligned to its region size. */
  RegionMisaligned: "region-misaligned",
  /** ToPA: OutputOffset >= the size of the current region (e.g. re-enabled after a ToPA stop). */
  OffsetBeyondRegion: "offset-beyond-region",
  /** ToPA: END=1 with INT=1 or STOP=1. */
  EndWithIntOrStop: "end-with-int-or-stop",
  /** ToPA: END=1 in entry 0 of a table. */
  EndInEntry0: "end-in-entry-0",
  /** ToPA with one output entry (CPUID.14H.0:ECX[1] = 0): an entry other than entry 0 has END=0. */
  SingleEntryNeedsEnd: "single-entry-needs-end",
  /** ToPA with one output entry: the END entry does not point to the current table's base. */
  SingleEntryEndBase: "single-entry-end-base",
  /**
   * The output pointer reached restricted memory (an SMRR range, §33.2.7.4 Table 33-5:
   * the processor "may signal an error and disable packet generation"; with the
   * unit's `restrictedOutput` "error").
   */
  RestrictedOutput: "restricted-output",
  /** The ToPA write pointer (table base + 8 × entry index) entered restricted memory (Table 33-5). */
  RestrictedTable: "restricted-table",
} as const;
export type OutputError = (typeof OutputError)[keyof typeof OutputError];

/** Where and why an operational error happened. */
export interface OutputErrorInfo {
  readonly kind: OutputError;
  /** ToPA: the table holding the offending entry; single range: the output base. */
  readonly tableBase: number;
  /** ToPA: index of the offending entry (-1 when the table base itself is wrong); single range: -1. */
  readonly index: number;
  readonly reason: string;
}
