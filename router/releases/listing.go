package releases

import "github.com/llamatray/llamatray/router/wire"

// Listing is the GET /api/llama-server document, for the server, its client, and the CLI when no
// instance runs: the builds installed, the llama-server in use, and what installing would pick.
type Listing struct {
	Builds         []Build          `json:"builds"`
	InUse          wire.LlamaServer `json:"in_use"`
	Available      *Available       `json:"available,omitempty"` // when asked for
	AvailableError string           `json:"available_error,omitempty"`
}

// Available is what installing a release would pick here, and the other archives that run here.
type Available struct {
	Build  string  `json:"build"`
	Chosen Offer   `json:"chosen"`
	Others []Offer `json:"others"`
}

// Offer is one archive of a release the user can pick.
type Offer struct {
	Asset   string `json:"asset"`
	Backend string `json:"backend"`
	Size    int64  `json:"size"`
	Reason  string `json:"reason,omitempty"`
}

// AvailableOf describes the choice Plan made in a release.
func AvailableOf(rel Release, c Choice) *Available {
	a := &Available{Build: rel.TagName, Chosen: Offer{Asset: c.Asset.Name, Backend: c.Label(), Size: c.Asset.Size, Reason: c.Reason},
		Others: []Offer{}}
	for _, o := range c.Others {
		a.Others = append(a.Others, Offer{Asset: o.Asset.Name, Backend: o.Label(), Size: o.Asset.Size})
	}
	return a
}
