package replies

import (
	"fmt"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
)

// makeRoom keeps the open replies within buffer.MaxReplies: when a new
// reply (id) arrives with the cap reached, the oldest waiting one (not the
// one being spoken) is finished as dropped, with its ack, so the backend
// hears that it will never be spoken. A flood of replies thus costs the
// oldest unheard ones, never the device's storage, memory or link. The
// counts come from the store's index: no reply is read unless one must go.
func (p *Player) makeRoom(id string) error {
	if open, _ := p.o.Store.ReplyCounts(); open < buffer.MaxReplies {
		return nil
	}
	if _, err := p.o.Store.GetReply(id); err == nil {
		return nil // a redelivery: stored already, needs no room
	}
	p.fin.Lock()
	defer p.fin.Unlock()
	oldest, err := p.o.Store.OpenReplies(8)
	if err != nil {
		return fmt.Errorf("make room for a new reply: %w", err)
	}
	for _, r := range oldest {
		if r.State == buffer.ReplySpeaking {
			continue
		}
		p.finishLocked(r, protocol.OutcomeDropped, fmt.Sprintf("more than %d replies waiting: the oldest is dropped for a newer one", buffer.MaxReplies))
		return nil
	}
	return nil
}
