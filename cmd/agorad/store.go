package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/configs"
)

const storeUsage = `usage:
  agorad store check   [-c FILE] [--state-dir DIR] [--json]
      verify every file, key, value and checksum of the store (never changes it);
      exit 0 when intact, 1 when damaged, 4 when it cannot be read at all (key)
  agorad store salvage [-c FILE] [--state-dir DIR] --to NEWDIR [--new-key-file F | --plain]
      copy every readable record, in order, into a new store (new store_id) in NEWDIR,
      encrypted like the old one, with F's key, or not at all (--plain);
      the damaged store is not changed; exit 1 when something could not be read
  agorad store rekey   [-c FILE] [--state-dir DIR] --new-key-file FILE
      re-encrypt the store's key registry under a new master key (agorad stopped);
      then point storage.encryption_key_file at the new key
`

// cmdStore is `agorad store check|salvage|rekey`.
func cmdStore(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, storeUsage)
		return exitUsage
	}
	if h := args[0]; h == "-h" || h == "-help" || h == "--help" || h == "help" {
		fmt.Fprint(stdout, storeUsage)
		return exitOK
	}
	sub := args[0]
	fs := flag.NewFlagSet("agorad store "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, storeUsage) }
	var (
		cfgPath  = fs.String("c", "", "configuration file (YAML): state_dir and storage.encryption_key_file")
		stateDir = fs.String("state-dir", "", "state directory (the store is its store/ subdirectory)")
		asJSON   = fs.Bool("json", false, "check: print the report as JSON")
		to       = fs.String("to", "", "salvage: the new store directory (must not exist or be empty)")
		newKey   = fs.String("new-key-file", "", "rekey: the new key file; salvage: encrypt the new store with this key")
		plain    = fs.Bool("plain", false, "salvage: the new store is not encrypted")
		tmp      = fs.String("tmp", "", "directory for the working copy (default $TMPDIR)")
	)
	if err := fs.Parse(args[1:]); err != nil {
		return usageCode(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agorad store %s: unexpected argument %q\n", sub, fs.Arg(0))
		return exitUsage
	}
	cfg, err := configs.Load(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "agorad store: %v\n", err)
		return exitUsage
	}
	if *stateDir != "" {
		cfg.StateDir = *stateDir
	}
	dir := filepath.Join(cfg.StateDir, "store")
	var key []byte
	if cfg.Storage.EncryptionKeyFile != "" {
		if key, err = buffer.ReadKeyFile(cfg.Storage.EncryptionKeyFile); err != nil {
			fmt.Fprintf(stderr, "agorad store: storage.encryption_key_file: %v\n", err)
			return exitStore
		}
	}
	opts := buffer.CheckOptions{EncryptionKey: key, TempDir: *tmp}
	switch sub {
	case "check":
		r, err := buffer.Check(dir, opts)
		if err != nil {
			fmt.Fprintf(stderr, "agorad store check: %v\n", err)
			return exitStore
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(r); err != nil {
				// A closed pipe or full disk: the caller must not read a
				// clean exit as "checked and healthy".
				fmt.Fprintf(stderr, "agorad store check: write the report: %v\n", err)
				return exitFailed
			}
		} else {
			printReport(stdout, r)
		}
		if r.Damaged() {
			fmt.Fprintf(stderr, "agorad store check: %s is damaged: `agorad store salvage --to NEWDIR` copies what is readable into a new store\n", dir)
			return exitFailed
		}
		return exitOK
	case "salvage":
		if *to == "" {
			fmt.Fprintln(stderr, "agorad store salvage: --to NEWDIR is required")
			return exitUsage
		}
		if *newKey != "" {
			if opts.TargetKey, err = buffer.ReadKeyFile(*newKey); err != nil {
				fmt.Fprintf(stderr, "agorad store salvage: --new-key-file: %v\n", err)
				return exitUsage
			}
		}
		opts.TargetPlain = *plain
		r, err := buffer.Salvage(dir, *to, opts)
		if err != nil {
			fmt.Fprintf(stderr, "agorad store salvage: %v\n", err)
			if errors.Is(err, buffer.ErrKey) {
				return exitStore
			}
			return exitFailed
		}
		printReport(stdout, r)
		fmt.Fprintf(stdout, "salvaged: %d keys copied into %s (store_id %s)\n", r.Copied, *to, r.NewStoreID)
		fmt.Fprintf(stdout, "next: stop agorad, move %s and %s away, move %s to %s and %s.identity to %s.identity\n",
			dir, dir+".identity", *to, dir, *to, dir)
		if len(r.Unreadable) > 0 || len(r.Files) > 0 {
			return exitFailed
		}
		return exitOK
	case "rekey":
		if *newKey == "" {
			fmt.Fprintln(stderr, "agorad store rekey: --new-key-file is required")
			return exitUsage
		}
		nk, err := buffer.ReadKeyFile(*newKey)
		if err != nil {
			fmt.Fprintf(stderr, "agorad store rekey: --new-key-file: %v\n", err)
			return exitUsage
		}
		if err := buffer.Rekey(dir, key, nk); err != nil {
			fmt.Fprintf(stderr, "agorad store rekey: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "%s: key registry re-encrypted; set storage.encryption_key_file to %s\n", dir, *newKey)
		return exitOK
	default:
		fmt.Fprintf(stderr, "agorad store: unknown subcommand %q\n%s", sub, storeUsage)
		return exitUsage
	}
}

func printReport(w io.Writer, r buffer.Report) {
	fmt.Fprintf(w, "store %s\n  store_id %s, seq %d", r.Dir, r.StoreID, r.Seq)
	if r.IdentityID != "" {
		fmt.Fprintf(w, " (identity file: %s, seq %d)", r.IdentityID, r.IdentitySeq)
	}
	fmt.Fprintf(w, "\n  readable: %d listen, %d outbox, %d journaled audio, %d retained audio, %d other keys\n",
		r.Listen, r.Outbox, r.Journal, r.Retained, r.OtherKeys)
	for _, f := range r.Files {
		fmt.Fprintf(w, "  DAMAGED file %s\n", f)
	}
	for _, u := range r.Unreadable {
		fmt.Fprintf(w, "  UNREADABLE %s\n", u)
	}
	if r.Identity != "" {
		fmt.Fprintf(w, "  IDENTITY %s\n", r.Identity)
	}
	if r.RolledBack != "" {
		fmt.Fprintf(w, "  ROLLED BACK %s\n", r.RolledBack)
	}
	if !r.Damaged() {
		fmt.Fprintln(w, "  intact")
	}
}
