// Package agui runs one AG-UI turn against an agent server: it POSTs a
// RunAgentInput (the official Go SDK's types) and reads the server-sent event
// stream to RUN_FINISHED or RUN_ERROR.
//
// Events are decoded with the SDK's events.EventFromJSON. What the SDK's
// sse.Client lacks, and this package therefore does by hand, is the SSE
// framing itself: the SDK client drops a final frame that is not followed by
// a blank line, ignores event:/id: fields, starts a goroutine per line, keeps
// one idle connection per host (a fleet bridge runs hundreds of turns at
// once) and logs every stream at Info through logrus.
//
// Invariants:
//   - Run returns a Result only for a stream that ended with RUN_FINISHED;
//     anything else is an error, classified by Permanent (the agent rejected
//     the input: HTTP 4xx, RUN_ERROR) versus transient (unreachable, 5xx,
//     timeout, a stream that broke off or sent garbage).
//   - Unknown event types are counted and skipped, never fatal.
//   - Every size read from the network is bounded (line, event, stream), and
//     error messages carry at most ExcerptLen bytes of what was received.
package agui
