/** ptkit's version, printed by --version. Keep in step with package.json. */
export const VERSION = "0.1.0";
