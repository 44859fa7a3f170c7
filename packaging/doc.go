// Package packaging holds the Debian packages' descriptions (nfpm.yaml,
// maintainer scripts per package) and the tests that build them: no Go
// code ships from here.
//
// Invariants the tests keep:
//   - make deb MODELS=... builds agorad-models, whose files land in
//     /usr/share/agorad/models (where the default configuration finds them)
//     with a SHA256SUMS that matches them, the keyword spotter's front end
//     in kws/ with its own; agorad doctor verifies both and fails when a
//     file does not match.
//   - A damaged or unrecorded source model, or a spotter library of another
//     architecture, is refused at packaging, never shipped.
//   - agorad's package ships every document of docs/ and the README.
package packaging
