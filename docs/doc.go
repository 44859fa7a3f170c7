// Package docs holds the project's documents (*.md) and the test that keeps
// them true to the programs: no Go code ships from here.
//
// Invariants the test keeps, for README.md, docs/*.md and
// refgraph/README.md:
//   - Every agorad, agoractl and agora-bridge command they show (in code
//     spans and code blocks) names a command and subcommand the program's
//     help lists, and only flags that command's -h prints; every -h exits 0.
//   - Every `make TARGET VAR=...` they show names a target and variables
//     the Makefile has.
//   - The commands they show that change nothing and need no device
//     (agorad model list, agorad completion bash, agorad --version, ...)
//     run and exit 0.
package docs
