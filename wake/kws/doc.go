// Package kws hears the name "Agora" in the audio itself: a keyword
// spotter beside the VAD, for the utterances whisper writes something else
// for ("I've got a", "$1 is", "how to learn"; issue 21). Whisper's text
// still decides wherever it has the name (wake.Rules.MatchHeard).
//
// The front end is openWakeWord's: its mel spectrogram and speech
// embedding models (TensorFlow Lite, from the pinned PyPI wheel
// pyopen-wakeword 1.1.0, with the TensorFlow Lite C library, unpacked by
// make models into models/kws). The library is loaded at run time, so a
// build or a device without it still runs. On top sits a small dense
// network trained here on synthetic speech, espeak-ng and flite voices
// (wake/kws/train; the built-in head is agora.json, the late head that
// hears what follows the name late.json, the gate that spares the head
// most windows gate.json; docs/wake.md has what they hear and miss).
//
// Invariants:
//   - The embeddings are those of pyopen-wakeword's Python front end for
//     the same audio (a test checks them against its output): 80 ms steps,
//     each utterance scored from the same silent start state, so a score
//     depends on the utterance alone, not on what was heard before.
//   - A Hit's End is where its best window ends, from the utterance's
//     start: the name ended at most a quarter second before it.
//   - With a late head (SetLate; OpenDefault sets the built-in one), a
//     window's score is the verdict (Verdict): the head's probability and
//     the late head's best over the windows that end up to After[1]
//     later, which hold the words after the name. The late head is asked
//     only after windows the head scores 0.5 or more and never wakes the
//     device alone; the Hit keeps both parts. It adds no latency: the
//     utterance is whole when it is scored, and silence is added after
//     it for the late windows as for the head's.
//   - With a gate (SetGate; OpenDefault sets the built-in one, gate.json,
//     taught the built-in head's logit), the head runs only on windows the
//     gate passes; a window it turns away scores the gate's probability,
//     under its threshold, which is at most 0.5: the verdict, the fuse
//     band and the late head look only from 0.5 up, so the gate changes
//     the cost, not what is heard, provided it passes every window the
//     head scores 0.5 or more (checked on unseen speech by TestGateReal
//     and bench/kwsbench -gate).
//   - A Spotter is safe for concurrent use; calls take turns on one
//     interpreter per model, one thread each, on XNNPACK where the library
//     has it (the pinned one does; Spotter.Kernels says which), else on
//     the interpreter's built-in kernels: the same embeddings either way.
//   - The embedding model runs on blocks of windows (embBlock a call):
//     the same embeddings as a call a window, since it is convolutional
//     in time; the mel model runs a call per 80 ms step, since it is not.
//   - A head's weights under 1e-20 are 0 (denormal floats would slow
//     every product with them; they add nothing to its sums).
package kws
