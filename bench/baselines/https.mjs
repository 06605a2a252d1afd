// Baseline for `https`: a bare node:https server with the same certificate as zest. Mode
// `get` answers every request with a fixed JSON body (argv[5]); mode `put` reads the whole body,
// then answers 200 with an empty body (tls-answer.mjs). Plain JS on plain node, like the built zest CLI.
import { createServer } from "node:https";
import { answer, baselineArgs, serve } from "./tls-answer.mjs";

const { mode, tls, body } = baselineArgs(process.argv.slice(2));
serve(createServer(tls, answer(mode, body)), `https ${mode} baseline`);
