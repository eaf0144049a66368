/** @deprecated The error enum lives in the base layer: import from `../base/errors.js`. */
export { ErrorCode, errorMessage, PtError } from "../base/errors.js";
