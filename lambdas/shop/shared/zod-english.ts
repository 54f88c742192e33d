import { en } from 'zod/locales';
import { config } from 'zod/mini';

// zod/mini loads no locale, so every default message would read "Invalid input". The rejection
// reasons a consumer stores and dead-letters should say what is wrong: load the English ones.
// Schema modules import `* as z from 'zod/mini'` (not `{ z }`), which lets esbuild leave out
// whatever they do not use.
config(en());
