// Package systemd holds agorad's systemd integration files: the service unit
// (agorad.service), its system user (agorad.sysusers) and the configuration
// directory (agorad.tmpfiles). There is no Go code here; the package's test
// checks the files with systemd's own tools and asserts the directives the
// daemon depends on.
package systemd
