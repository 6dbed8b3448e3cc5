package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/wickfs"
)

// Skills constants.
const (
	// SkillFile is the file name a skill directory holds.
	SkillFile = "SKILL.md"
	// DefaultFrontMatterLines bounds how much of a SKILL.md is read to find
	// its front matter; the body is loaded by the agent on demand.
	DefaultFrontMatterLines = 200
	// DefaultMaxSkills caps the catalog.
	DefaultMaxSkills = 100
	// skillsHeader introduces the catalog in the system message.
	skillsHeader = "## Skills\n\nThese skills are available. Read a skill's SKILL.md with read_file before using it:\n"
)

// SkillNamePattern is what a skill's name must match: the name appears in
// the catalog and names the skill's folder, so it is one lowercase word of
// letters, digits and dashes that is safe as a folder name everywhere.
const SkillNamePattern = `^[a-z0-9][a-z0-9-]{0,63}$`

var skillName = regexp.MustCompile(SkillNamePattern)

// SkillEntry is a discovered skill.
type SkillEntry struct {
	Name        string `json:"name"`        // front matter "name"
	Description string `json:"description"` // front matter "description"
	Path        string `json:"path"`        // full path of the SKILL.md file
}

// CatalogLine is a skill's line in the catalog the system message lists:
// its name, its description and the file to read for the full instructions.
func (s SkillEntry) CatalogLine() string {
	return fmt.Sprintf("[%s] %s → Read %s for full instructions", s.Name, s.Description, s.Path)
}

// SkillProblem is a SKILL.md file that was found but not loaded into the
// catalog, with a warning that says why and what to fix.
type SkillProblem struct {
	Path    string `json:"path"`    // full path of the SKILL.md file
	Warning string `json:"warning"` // why it is not loaded
}

// SkillsHook discovers SKILL.md files and injects their catalog.
type SkillsHook struct {
	loop.BaseHook
	fs     wickfs.FileSystem
	paths  []string
	logger *slog.Logger

	mu     sync.Mutex
	skills []SkillEntry
	// catalog is SkillsCatalog(skills), rendered once per discovery
	// because every model call of the run sends it.
	catalog string
}

// SkillsOption configures a SkillsHook.
type SkillsOption func(*SkillsHook)

// WithSkillsLogger sets the logger for skipped skill files.
func WithSkillsLogger(l *slog.Logger) SkillsOption { return func(h *SkillsHook) { h.logger = l } }

// NewSkillsHook returns the skills hook for the given skill directories.
func NewSkillsHook(fs wickfs.FileSystem, paths []string, opts ...SkillsOption) *SkillsHook {
	h := &SkillsHook{fs: fs, paths: paths, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Name implements loop.Hook.
func (h *SkillsHook) Name() string { return NameSkills }

// Phases implements loop.Hook.
func (h *SkillsHook) Phases() []string { return phasesOf(NameSkills) }

// BeforeAgent discovers the skills.
func (h *SkillsHook) BeforeAgent(ctx context.Context, _ *loop.AgentState) error {
	skills, _, err := discoverSkills(ctx, h.fs, h.paths, h.logger)
	if err != nil {
		return err
	}
	catalog := ""
	if len(skills) > 0 {
		catalog = SkillsCatalog(skills)
	}
	h.mu.Lock()
	h.skills, h.catalog = skills, catalog
	h.mu.Unlock()
	return nil
}

// Skills returns the skills found by BeforeAgent.
func (h *SkillsHook) Skills() []SkillEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]SkillEntry(nil), h.skills...)
}

// ModifyRequest appends the catalog to the system message.
func (h *SkillsHook) ModifyRequest(_ context.Context, msgs []llm.Message) ([]llm.Message, error) {
	h.mu.Lock()
	catalog := h.catalog
	h.mu.Unlock()
	if catalog == "" {
		return msgs, nil
	}
	return loop.AppendSystem(msgs, catalog), nil
}

// SkillsCatalog renders the catalog block: a header and one line per skill.
func SkillsCatalog(skills []SkillEntry) string {
	var b strings.Builder
	b.WriteString(skillsHeader)
	for _, s := range skills {
		b.WriteString(s.CatalogLine())
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// DiscoverSkills finds SKILL.md files under each path and parses their YAML
// front matter. Missing directories are skipped. A file that cannot be
// loaded (no or invalid front matter, a name that does not match
// SkillNamePattern, beyond DefaultMaxSkills) is returned as a problem, so
// that its author sees why the skill is missing. Skills are sorted by name,
// problems by path.
func DiscoverSkills(ctx context.Context, fs wickfs.FileSystem, paths []string) ([]SkillEntry, []SkillProblem, error) {
	return discoverSkills(ctx, fs, paths, slog.New(slog.DiscardHandler))
}

func discoverSkills(ctx context.Context, fs wickfs.FileSystem, paths []string, logger *slog.Logger) ([]SkillEntry, []SkillProblem, error) {
	var out []SkillEntry
	var problems []SkillProblem
	seen := map[string]bool{}
	for _, dir := range paths {
		res, err := fs.Glob(ctx, SkillFile, dir)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			// A skills directory that does not exist yet is not an error.
			logger.DebugContext(ctx, "skills directory skipped", "path", dir, "err", err)
			continue
		}
		for _, f := range res.Files {
			if path.Base(f) != SkillFile || seen[f] {
				continue
			}
			seen[f] = true
			entry, err := readSkill(ctx, fs, f)
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				logger.WarnContext(ctx, "skill skipped", "path", f, "err", err)
				problems = append(problems, SkillProblem{Path: f, Warning: "not loaded: " + err.Error()})
				continue
			}
			out = append(out, entry)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Path < out[j].Path
	})
	if len(out) > DefaultMaxSkills {
		for _, s := range out[DefaultMaxSkills:] {
			problems = append(problems, SkillProblem{Path: s.Path, Warning: fmt.Sprintf("not loaded: the catalog holds at most %d skills", DefaultMaxSkills)})
		}
		out = out[:DefaultMaxSkills]
	}
	sort.Slice(problems, func(i, j int) bool { return problems[i].Path < problems[j].Path })
	return out, problems, nil
}

var (
	errNoFrontMatter = errors.New("no YAML front matter (--- … ---) at the top of the file")
	errSkillName     = errors.New("is not a folder-safe name: use lowercase letters, digits and dashes, starting with a letter or digit, at most 64 characters (" + SkillNamePattern + ")")
)

func readSkill(ctx context.Context, fs wickfs.FileSystem, file string) (SkillEntry, error) {
	lines, err := fs.ReadLines(ctx, file, 0, DefaultFrontMatterLines)
	if err != nil {
		return SkillEntry{}, err
	}
	fm, err := frontMatter(lines.Lines)
	if err != nil {
		return SkillEntry{}, err
	}
	var meta struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
	}
	if err := yaml.Unmarshal([]byte(fm), &meta); err != nil {
		return SkillEntry{}, fmt.Errorf("front matter: %w", err)
	}
	name := strings.TrimSpace(meta.Name)
	if name == "" {
		name = path.Base(path.Dir(file))
	}
	if !skillName.MatchString(name) {
		return SkillEntry{}, fmt.Errorf("name %q %w", name, errSkillName)
	}
	desc := strings.Join(strings.Fields(meta.Description), " ")
	return SkillEntry{Name: name, Description: desc, Path: file}, nil
}

// frontMatter returns the YAML between a leading "---" line and the next one.
func frontMatter(lines []string) (string, error) {
	if len(lines) == 0 || strings.TrimSpace(strings.TrimPrefix(lines[0], "\ufeff")) != "---" {
		return "", errNoFrontMatter
	}
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "---" {
			return strings.Join(lines[1:i], "\n"), nil
		}
	}
	return "", errNoFrontMatter
}
