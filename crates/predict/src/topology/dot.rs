//! Graphviz dot files in LogGOPSim's routing convention: a network someone else drew.
//!
//! LogGOPSim (Hoefler et al.) describes a network as `digraph NAME { A -> B [comment="H1,H2"]; … }`
//! where each directed edge's `comment` lists the destination hosts routed over that edge. This
//! module reads that convention so that the same files drive both simulators.
//!
//! Rules, in the order they matter:
//! - **Grammar**: `[strict] (graph|digraph) [ID] { stmt; … }` with edge statements (chains
//!   `A -> B -> C` give one edge per step, all with the statement's attributes), node
//!   statements and `node`/`graph` attribute statements (ignored), `ID = ID` (ignored), `edge
//!   [..]` defaults (apply to later edges), ports `A:p` (ignored). IDs may be plain, numerals,
//!   quoted (`\"` escapes, `\` + newline continues) or `<html>`. Comments: `//`, `/* */`, and
//!   lines starting with `#`. Subgraphs, `{…}` edge operands and a second graph are refused.
//!   `->` belongs to `digraph` and `--` to `graph`, as in Graphviz. An undirected edge is two
//!   directed links (as written, then reversed); its comment says the destinations whose
//!   traffic crosses it, and the direction is towards the destination (a breadth-first search
//!   from each destination over the edges listing it orients them; ties go to the first found).
//! - **Hosts** (LogGOPSim2's `TopoGraph`, in a file with a node named `H…`): exactly the
//!   nodes whose name starts with `H`, whatever the comments list. In a file with no such node
//!   (commperf's own convention): every name listed in some comment, plus every node named
//!   `h<digits>`. A comment naming something that is not a node is an error.
//! - **Host order** (host index = rank under the identity map): LogGOPSim2's, the order the
//!   nodes first appear as nodes (cgraph's node order), in a file with `H…` nodes; otherwise by
//!   the number when every host is `h<n>`, else by first appearance in the file.
//! - **Routing**: from the source host's node, repeatedly take the out-edge whose comment lists
//!   the destination (names split on commas and blanks, as LogGOPSim2's `strtok(", \t\n")`), or
//!   the node's only out-edge when it has one (LogGOPSim2's rule; `comment="*"` says so, and is
//!   refused on a node with several out-edges), until the destination is reached.
//! - **Host names for rank maps**: a host's node name, or the `hostname="…"` of its out-edge
//!   (LogGOPSim2's convention: its mapping files are `RANK HOSTNAME` lines, read by `--rank-map`). No such edge, or more steps than there
//!   are nodes (a loop), is [`TopologyError::NoRoute`]. Two out-edges of one node listing the same
//!   destination are a load-time error (in a `digraph`); a node listing itself is ignored. A next-hop table
//!   (node × destination → link) is built at load time, so a route costs one lookup per hop.
//! - **Link classes**: an edge's `class="…"` attribute, else `host` when either end is a host,
//!   else `switch`.
//! - **Errors** name `file:line:column` and the offending token ([`TopologyError::File`]).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

use super::{Link, Network, TopologyError};

const NONE: u32 = u32::MAX;

/// Largest next-hop table (nodes × hosts entries) a file may need.
const MAX_TABLE: u64 = 1 << 26;

/// A network read from a Graphviz dot file with LogGOPSim routing comments.
#[derive(Debug, Clone)]
pub struct Dot {
    file: String,
    graph: String,
    nodes: Vec<String>,
    /// Host index → node id.
    hosts: Vec<u32>,
    links: Vec<Link>,
    /// Link → node id it leads to.
    link_to: Vec<u32>,
    /// `next[node * hosts + dst]`: the link leaving `node` towards host `dst`, or `NONE`.
    next: Vec<u32>,
    /// Host index → its `hostname=` (from the first of its out-edges that has one; two hosts
    /// with one name are refused where the second is given).
    aliases: Vec<Option<String>>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An identifier; `true` when it was quoted or HTML (so never a keyword).
    Id(String, bool),
    Punct(&'static str),
    Eof,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
    col: usize,
}

impl Tok {
    fn show(&self) -> String {
        match self {
            Tok::Id(s, true) => format!("\"{s}\""),
            Tok::Id(s, false) => s.clone(),
            Tok::Punct(p) => (*p).to_string(),
            Tok::Eof => "end of file".into(),
        }
    }
    fn keyword(&self, kw: &str) -> bool {
        matches!(self, Tok::Id(s, false) if s.eq_ignore_ascii_case(kw))
    }
}

struct Lexer<'a> {
    file: &'a str,
    chars: Vec<char>,
    pos: usize,
    line: usize,
    col: usize,
    /// Only whitespace so far on this line (for `#` lines).
    line_start: bool,
}

impl Lexer<'_> {
    fn err(&self, line: usize, col: usize, why: String) -> TopologyError {
        TopologyError::File {
            file: self.file.to_string(),
            line,
            column: col,
            why,
        }
    }
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
            self.line_start = true;
        } else {
            self.col += 1;
            if !c.is_whitespace() {
                self.line_start = false;
            }
        }
        Some(c)
    }

    fn tokens(mut self) -> Result<Vec<Token>, TopologyError> {
        let mut out = Vec::new();
        loop {
            // Skip whitespace and comments.
            loop {
                match (self.peek(0), self.peek(1)) {
                    (Some(c), _) if c.is_whitespace() => {
                        self.bump();
                    }
                    (Some('#'), _) if self.line_start => {
                        while self.peek(0).is_some_and(|c| c != '\n') {
                            self.bump();
                        }
                    }
                    (Some('/'), Some('/')) => {
                        while self.peek(0).is_some_and(|c| c != '\n') {
                            self.bump();
                        }
                    }
                    (Some('/'), Some('*')) => {
                        let (line, col) = (self.line, self.col);
                        self.bump();
                        self.bump();
                        loop {
                            match (self.peek(0), self.peek(1)) {
                                (Some('*'), Some('/')) => {
                                    self.bump();
                                    self.bump();
                                    break;
                                }
                                (Some(_), _) => {
                                    self.bump();
                                }
                                (None, _) => {
                                    return Err(self.err(
                                        line,
                                        col,
                                        "unterminated `/*` comment".into(),
                                    ))
                                }
                            }
                        }
                    }
                    _ => break,
                }
            }
            let (line, col) = (self.line, self.col);
            let Some(c) = self.peek(0) else {
                out.push(Token {
                    tok: Tok::Eof,
                    line,
                    col,
                });
                return Ok(out);
            };
            let tok = match c {
                '{' | '}' | '[' | ']' | ';' | ',' | '=' | ':' => {
                    self.bump();
                    Tok::Punct(match c {
                        '{' => "{",
                        '}' => "}",
                        '[' => "[",
                        ']' => "]",
                        ';' => ";",
                        ',' => ",",
                        '=' => "=",
                        _ => ":",
                    })
                }
                '-' if self.peek(1) == Some('>') => {
                    self.bump();
                    self.bump();
                    Tok::Punct("->")
                }
                '-' if self.peek(1) == Some('-') => {
                    self.bump();
                    self.bump();
                    Tok::Punct("--")
                }
                '"' => {
                    self.bump();
                    let mut s = String::new();
                    loop {
                        match self.bump() {
                            None => {
                                return Err(self.err(
                                    line,
                                    col,
                                    "unterminated quoted string".into(),
                                ))
                            }
                            Some('"') => break,
                            Some('\\') => match self.peek(0) {
                                Some('"') => {
                                    self.bump();
                                    s.push('"');
                                }
                                Some('\n') => {
                                    self.bump();
                                }
                                Some('\r') if self.peek(1) == Some('\n') => {
                                    self.bump();
                                    self.bump();
                                }
                                _ => s.push('\\'),
                            },
                            Some(c) => s.push(c),
                        }
                    }
                    Tok::Id(s, true)
                }
                '<' => {
                    self.bump();
                    let mut depth = 1usize;
                    let mut s = String::new();
                    loop {
                        match self.bump() {
                            None => {
                                return Err(self.err(line, col, "unterminated `<…>` string".into()))
                            }
                            Some('<') => depth += 1,
                            Some('>') => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            Some(_) => {}
                        }
                        if let Some(&c) = self.chars.get(self.pos - 1) {
                            s.push(c);
                        }
                    }
                    Tok::Id(s, true)
                }
                c if c == '-' || c == '.' || c.is_ascii_digit() => {
                    let mut s = String::new();
                    if c == '-' {
                        s.push(c);
                        self.bump();
                    }
                    let mut dot = false;
                    while let Some(d) = self.peek(0) {
                        if d.is_ascii_digit() || (d == '.' && !dot) {
                            dot |= d == '.';
                            s.push(d);
                            self.bump();
                        } else {
                            break;
                        }
                    }
                    if !s.chars().any(|d| d.is_ascii_digit()) {
                        return Err(self.err(line, col, format!("unexpected `{s}`")));
                    }
                    if self.peek(0).is_some_and(is_id_char) {
                        let next = self.peek(0).unwrap_or(' ');
                        return Err(self.err(
                            line,
                            col,
                            format!("`{s}{next}…`: an ID starting with a digit must be quoted"),
                        ));
                    }
                    Tok::Id(s, false)
                }
                c if is_id_char(c) => {
                    let mut s = String::new();
                    while let Some(d) = self
                        .peek(0)
                        .filter(|&d| is_id_char(d) || d.is_ascii_digit())
                    {
                        s.push(d);
                        self.bump();
                    }
                    Tok::Id(s, false)
                }
                other => {
                    return Err(self.err(line, col, format!("unexpected character `{other}`")))
                }
            };
            out.push(Token { tok, line, col });
        }
    }
}

fn is_id_char(c: char) -> bool {
    c.is_alphabetic() || c == '_' || !c.is_ascii()
}

/// The number of a host named `h<digits>` (or `H<digits>`), as (significant digits) for ordering
/// the hosts of a file in commperf's own convention.
fn host_number(name: &str) -> Option<&str> {
    let digits = name.strip_prefix(['H', 'h'])?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let trimmed = digits.trim_start_matches('0');
    Some(if trimmed.is_empty() { "0" } else { trimmed })
}

/// An edge as written, before links are made.
struct RawEdge {
    from: u32,
    to: u32,
    /// Destination names, each once (shared by the edges of one chain statement).
    dests: Rc<[String]>,
    comment_at: (usize, usize),
    class: Option<String>,
    /// `comment="*"`: LogGOPSim2's "this node's only out-edge carries everything".
    star: bool,
    /// `hostname="…"`: the host's name in LogGOPSim2 mapping files (`RANK NAME`), with the
    /// value's position.
    hostname: Option<(String, usize, usize)>,
}

struct Parser<'a> {
    file: &'a str,
    toks: Vec<Token>,
    pos: usize,
    /// Every name seen (node or comment entry) → first-appearance order.
    seen: HashMap<String, usize>,
    node_ids: HashMap<String, u32>,
    nodes: Vec<String>,
    /// Comment entries with their position, to check they are nodes.
    mentioned: Vec<(String, usize, usize)>,
    edges: Vec<RawEdge>,
}

type Attr = (String, String, usize, usize);

impl<'a> Parser<'a> {
    /// The tokens of `text`, ready to be read.
    fn new(text: &str, file: &'a str) -> Result<Parser<'a>, TopologyError> {
        let toks = Lexer {
            file,
            chars: text.chars().collect(),
            pos: 0,
            line: 1,
            col: 1,
            line_start: true,
        }
        .tokens()?;
        Ok(Parser {
            file,
            toks,
            pos: 0,
            seen: HashMap::new(),
            node_ids: HashMap::new(),
            nodes: Vec::new(),
            mentioned: Vec::new(),
            edges: Vec::new(),
        })
    }

    fn peek(&self) -> &Token {
        let last = self.toks.len().saturating_sub(1);
        &self.toks[self.pos.min(last)]
    }
    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn err_at(&self, t: &Token, why: String) -> TopologyError {
        TopologyError::File {
            file: self.file.to_string(),
            line: t.line,
            column: t.col,
            why,
        }
    }
    fn expect(&mut self, p: &'static str) -> Result<Token, TopologyError> {
        let t = self.next();
        if t.tok == Tok::Punct(p) {
            Ok(t)
        } else {
            Err(self.err_at(&t, format!("expected `{p}`, found `{}`", t.tok.show())))
        }
    }
    fn id(&mut self, what: &str) -> Result<(String, Token), TopologyError> {
        let t = self.next();
        match &t.tok {
            Tok::Id(s, _) => Ok((s.clone(), t)),
            other => Err(self.err_at(&t, format!("expected {what}, found `{}`", other.show()))),
        }
    }
    fn see(&mut self, name: &str) {
        let n = self.seen.len();
        self.seen.entry(name.to_string()).or_insert(n);
    }
    fn node(&mut self, name: &str) -> u32 {
        self.see(name);
        if let Some(&id) = self.node_ids.get(name) {
            return id;
        }
        let id = self.nodes.len() as u32;
        self.nodes.push(name.to_string());
        self.node_ids.insert(name.to_string(), id);
        id
    }

    /// A node ID with an optional (ignored) port.
    fn node_id(&mut self) -> Result<u32, TopologyError> {
        let t = self.peek().clone();
        if t.tok == Tok::Punct("{") || t.tok.keyword("subgraph") {
            return Err(self.err_at(
                &t,
                format!("`{}`: subgraphs are not supported", t.tok.show()),
            ));
        }
        let (name, _) = self.id("a node name")?;
        let id = self.node(&name);
        for _ in 0..2 {
            if self.peek().tok == Tok::Punct(":") {
                self.next();
                self.id("a port name")?;
            }
        }
        Ok(id)
    }

    /// Zero or more `[ … ]` lists.
    fn attr_lists(&mut self) -> Result<Vec<Attr>, TopologyError> {
        let mut attrs = Vec::new();
        while self.peek().tok == Tok::Punct("[") {
            self.next();
            loop {
                let t = self.peek().clone();
                match &t.tok {
                    Tok::Punct("]") => {
                        self.next();
                        break;
                    }
                    Tok::Punct(";") | Tok::Punct(",") => {
                        self.next();
                    }
                    Tok::Id(..) => {
                        let (key, _) = self.id("an attribute name")?;
                        if self.peek().tok == Tok::Punct("=") {
                            self.next();
                            let (value, vt) = self.id("an attribute value")?;
                            attrs.push((key, value, vt.line, vt.col));
                        } else {
                            attrs.push((key, "true".into(), t.line, t.col));
                        }
                    }
                    other => {
                        return Err(self.err_at(
                            &t,
                            format!("expected an attribute or `]`, found `{}`", other.show()),
                        ))
                    }
                }
            }
        }
        Ok(attrs)
    }

    fn graph(&mut self) -> Result<(String, bool), TopologyError> {
        if self.peek().tok.keyword("strict") {
            self.next();
        }
        let t = self.next();
        let directed = if t.tok.keyword("digraph") {
            true
        } else if t.tok.keyword("graph") {
            false
        } else {
            return Err(self.err_at(
                &t,
                format!("expected `graph` or `digraph`, found `{}`", t.tok.show()),
            ));
        };
        let name = match &self.peek().tok {
            Tok::Id(s, _) => {
                let s = s.clone();
                self.next();
                s
            }
            _ => String::new(),
        };
        self.expect("{")?;
        let mut edge_defaults: Vec<Attr> = Vec::new();
        loop {
            let t = self.peek().clone();
            match &t.tok {
                Tok::Punct("}") => {
                    self.next();
                    break;
                }
                Tok::Punct(";") => {
                    self.next();
                }
                Tok::Eof => return Err(self.err_at(&t, "missing `}` at end of file".into())),
                Tok::Punct("{") => {
                    return Err(self.err_at(&t, "`{`: subgraphs are not supported".into()))
                }
                tok if tok.keyword("subgraph") => {
                    return Err(self.err_at(&t, "`subgraph`: subgraphs are not supported".into()))
                }
                tok if tok.keyword("graph") || tok.keyword("node") => {
                    self.next();
                    self.attr_lists()?;
                }
                tok if tok.keyword("edge") => {
                    self.next();
                    let attrs = self.attr_lists()?;
                    edge_defaults.extend(attrs);
                }
                Tok::Id(..) => {
                    let save = self.pos;
                    self.next();
                    if self.peek().tok == Tok::Punct("=") {
                        self.next();
                        self.id("a value")?;
                        continue;
                    }
                    self.pos = save;
                    let mut chain = vec![self.node_id()?];
                    loop {
                        let op = self.peek().clone();
                        let want = if directed { "->" } else { "--" };
                        match &op.tok {
                            Tok::Punct(p @ ("->" | "--")) => {
                                if *p != want {
                                    return Err(self.err_at(
                                        &op,
                                        format!(
                                            "`{p}` in a {}: use `{want}`",
                                            if directed { "digraph" } else { "graph" }
                                        ),
                                    ));
                                }
                                self.next();
                                chain.push(self.node_id()?);
                            }
                            _ => break,
                        }
                    }
                    let attrs = self.attr_lists()?;
                    if chain.len() > 1 {
                        self.edges_from(&chain, &edge_defaults, &attrs, directed)?;
                    }
                }
                other => {
                    return Err(self.err_at(
                        &t,
                        format!("expected a statement, found `{}`", other.show()),
                    ))
                }
            }
        }
        let t = self.peek().clone();
        if t.tok != Tok::Eof {
            return Err(self.err_at(
                &t,
                format!(
                    "`{}` after the graph: one graph per file is supported",
                    t.tok.show()
                ),
            ));
        }
        Ok((name, directed))
    }

    fn edges_from(
        &mut self,
        chain: &[u32],
        defaults: &[Attr],
        attrs: &[Attr],
        directed: bool,
    ) -> Result<(), TopologyError> {
        let mut dests = Vec::new();
        let mut comment_at = (0, 0);
        let mut class = None;
        let mut star = false;
        let mut hostname = None;
        // Later attributes override earlier ones, statement attributes override defaults.
        for (key, value, line, col) in defaults.iter().chain(attrs) {
            match key.as_str() {
                "comment" => {
                    // LogGOPSim2 splits the list with strtok(", \t\n"). A name listed twice
                    // routes the same way as once: kept once, so that memory follows the
                    // hosts the comment names, not how often it repeats them.
                    star = value.trim() == "*";
                    dests = if star {
                        Vec::new()
                    } else {
                        let mut unique = HashSet::new();
                        value
                            .split([',', ' ', '\t', '\n', '\r'])
                            .filter(|s| !s.is_empty() && unique.insert(*s))
                            .map(str::to_string)
                            .collect()
                    };
                    comment_at = (*line, *col);
                }
                "hostname" if !value.trim().is_empty() => {
                    hostname = Some((value.trim().to_string(), *line, *col));
                }
                "class" => {
                    if value.trim().is_empty() {
                        return Err(TopologyError::File {
                            file: self.file.to_string(),
                            line: *line,
                            column: *col,
                            why: "empty link class".into(),
                        });
                    }
                    class = Some(value.trim().to_string());
                }
                _ => {}
            }
        }
        for d in &dests {
            self.see(d);
            self.mentioned.push((d.clone(), comment_at.0, comment_at.1));
        }
        let dests: Rc<[String]> = dests.into();
        for pair in chain.windows(2) {
            let ends: &[(u32, u32)] = if directed {
                &[(pair[0], pair[1])]
            } else {
                &[(pair[0], pair[1]), (pair[1], pair[0])]
            };
            for &(from, to) in ends {
                self.edges.push(RawEdge {
                    from,
                    to,
                    dests: Rc::clone(&dests),
                    comment_at,
                    class: class.clone(),
                    star,
                    hostname: hostname.clone(),
                });
            }
        }
        Ok(())
    }
}

impl Dot {
    /// Reads and parses a dot file.
    pub fn from_file(path: &Path) -> Result<Dot, TopologyError> {
        let text = commperf_core::read_text(path).map_err(|e| TopologyError::Io(e.to_string()))?;
        Dot::parse(&text, &path.display().to_string())
    }

    /// Parses dot text; `file` names it in descriptions and error messages.
    ///
    /// In steps over the parsed graph: which nodes are hosts ([`Parser::hosts`]), the links and
    /// the next-hop table the comments give ([`Parser::links`]; for an undirected graph,
    /// [`undirected_routes`]), LogGOPSim2's only-out-edge rule ([`Parser::only_out_edges`]),
    /// then the hosts' `hostname=` aliases ([`Parser::aliases`]).
    pub fn parse(text: &str, file: &str) -> Result<Dot, TopologyError> {
        let mut p = Parser::new(text, file)?;
        let (graph, directed) = p.graph()?;
        let (hosts, host_of) = p.hosts()?;
        let (links, link_to, mut next) = p.links(directed, &hosts, &host_of)?;
        if !directed {
            undirected_routes(&p, &hosts, &host_of, &mut next);
        }
        p.only_out_edges(&hosts, &mut next)?;
        let aliases = p.aliases(&hosts, &host_of)?;
        Ok(Dot {
            file: file.to_string(),
            graph,
            nodes: p.nodes,
            hosts,
            links,
            link_to,
            next,
            aliases,
        })
    }
}

/// The links, the node each leads to, and the next-hop table (as in [`Dot`]).
type LinksAndRoutes = (Vec<Link>, Vec<u32>, Vec<u32>);

/// The steps of [`Dot::parse`] after the graph is read.
impl Parser<'_> {
    /// A refusal at a place of the file.
    fn file_err(&self, line: usize, column: usize, why: String) -> TopologyError {
        TopologyError::File {
            file: self.file.to_string(),
            line,
            column,
            why,
        }
    }

    /// The hosts, as node ids in host order, and per node its host index (`NONE` for a
    /// switch).
    fn hosts(&self) -> Result<(Vec<u32>, Vec<u32>), TopologyError> {
        let p = self;
        let mut is_host = vec![false; p.nodes.len()];
        for (name, line, col) in &p.mentioned {
            match p.node_ids.get(name) {
                Some(&id) => is_host[id as usize] = true,
                None => {
                    return Err(p.file_err(
                        *line,
                        *col,
                        format!("comment names `{name}`, which is not a node of the graph"),
                    ))
                }
            }
        }
        // Hosts. A file with a node named `H…` is in LogGOPSim2's convention, and read as its
        // TopoGraph reads it: the hosts are exactly the nodes whose name starts with `H`
        // (whatever the comments name), ranked in the order the nodes first appear (cgraph's
        // node order, which `agfstnode`/`agnxtnode` walk). Other files keep commperf's own
        // convention: the names comments list, plus nodes `h<digits>`.
        let loggopsim2 = p.nodes.iter().any(|n| n.starts_with('H'));
        if loggopsim2 {
            for (id, name) in p.nodes.iter().enumerate() {
                is_host[id] = name.starts_with('H');
            }
        } else {
            for (id, name) in p.nodes.iter().enumerate() {
                if host_number(name).is_some() {
                    is_host[id] = true;
                }
            }
        }
        // Node ids are in order of first appearance as a node.
        let mut hosts: Vec<u32> = (0..p.nodes.len() as u32)
            .filter(|&id| is_host[id as usize])
            .collect();
        if hosts.is_empty() {
            return Err(p.file_err(
                1,
                1,
                "no hosts: name them in edge comments, or start their names with `H` \
                 (LogGOPSim2's convention)"
                    .into(),
            ));
        }
        let first = |id: u32| p.seen.get(&p.nodes[id as usize]).copied().unwrap_or(0);
        if loggopsim2 {
            // Already in node order.
        } else if hosts
            .iter()
            .all(|&id| host_number(&p.nodes[id as usize]).is_some())
        {
            hosts.sort_by_key(|&id| {
                let n = host_number(&p.nodes[id as usize]).unwrap_or("0");
                (n.len(), n.to_string(), first(id))
            });
        } else {
            hosts.sort_by_key(|&id| first(id));
        }
        let mut host_of = vec![NONE; p.nodes.len()];
        for (h, &id) in hosts.iter().enumerate() {
            host_of[id as usize] = h as u32;
        }
        Ok((hosts, host_of))
    }

    /// The links (one per edge as stored), the node each leads to, and the next-hop table with
    /// the routes a directed graph's comments give (an undirected graph's are filled after).
    fn links(
        &self,
        directed: bool,
        hosts: &[u32],
        host_of: &[u32],
    ) -> Result<LinksAndRoutes, TopologyError> {
        let p = self;
        super::check_size(p.file, p.edges.len() as u64)?;
        let table = p.nodes.len() as u64 * hosts.len() as u64;
        if table > MAX_TABLE {
            return Err(p.file_err(
                1,
                1,
                format!(
                    "{} nodes × {} hosts is too large a routing table (at most {MAX_TABLE} entries)",
                    p.nodes.len(),
                    hosts.len()
                ),
            ));
        }
        let nh = hosts.len();
        let mut next = vec![NONE; table as usize];
        let mut links = Vec::with_capacity(p.edges.len());
        let mut link_to = Vec::with_capacity(p.edges.len());
        for (l, e) in p.edges.iter().enumerate() {
            let (from, to) = (e.from as usize, e.to as usize);
            let class = e.class.clone().unwrap_or_else(|| {
                if host_of[from] != NONE || host_of[to] != NONE {
                    "host".into()
                } else {
                    "switch".into()
                }
            });
            links.push(Link {
                from: p.nodes[from].clone(),
                to: p.nodes[to].clone(),
                class,
            });
            link_to.push(e.to);
            if !directed {
                continue;
            }
            for d in e.dests.iter() {
                let Some(&dn) = p.node_ids.get(d) else {
                    continue;
                };
                let dh = host_of[dn as usize];
                if dh == NONE || dn == e.from {
                    continue;
                }
                let slot = &mut next[from * nh + dh as usize];
                if *slot != NONE && *slot != l as u32 {
                    let other = &links[*slot as usize];
                    return Err(p.file_err(
                        e.comment_at.0,
                        e.comment_at.1,
                        format!(
                            "node `{}` has two out-edges towards `{d}` (to `{}` and to `{}`)",
                            p.nodes[from], other.to, p.nodes[to]
                        ),
                    ));
                }
                *slot = l as u32;
            }
        }
        Ok((links, link_to, next))
    }

    /// LogGOPSim2 routes everything over a node's out-edge when it is the only one (whatever
    /// its comment says; `*` says so explicitly), and only then: fills those routes into
    /// `next`, and refuses a `*` on a node with other out-edges.
    fn only_out_edges(&self, hosts: &[u32], next: &mut [u32]) -> Result<(), TopologyError> {
        let p = self;
        let nh = hosts.len();
        let mut out_edges = vec![0u32; p.nodes.len()];
        let mut last_out = vec![NONE; p.nodes.len()];
        for (l, e) in p.edges.iter().enumerate() {
            out_edges[e.from as usize] += 1;
            last_out[e.from as usize] = l as u32;
        }
        for e in &p.edges {
            if e.star && out_edges[e.from as usize] != 1 {
                return Err(p.file_err(
                    e.comment_at.0,
                    e.comment_at.1,
                    format!(
                        "comment `*` (everything) on an out-edge of `{}`, which has {} out-edges: \
                         `*` routes through a node's only out-edge",
                        p.nodes[e.from as usize], out_edges[e.from as usize]
                    ),
                ));
            }
        }
        for (node, &k) in out_edges.iter().enumerate() {
            if k != 1 {
                continue;
            }
            for (dh, slot) in next[node * nh..(node + 1) * nh].iter_mut().enumerate() {
                if *slot == NONE && hosts[dh] as usize != node {
                    *slot = last_out[node];
                }
            }
        }
        Ok(())
    }

    /// Per host, its `hostname=` from the first of its out-edges that has one; a name given to
    /// two hosts is refused where the second is given.
    fn aliases(
        &self,
        hosts: &[u32],
        host_of: &[u32],
    ) -> Result<Vec<Option<String>>, TopologyError> {
        let p = self;
        let mut aliases: Vec<Option<String>> = vec![None; hosts.len()];
        let mut alias_of: HashMap<&str, u32> = HashMap::new();
        for e in &p.edges {
            let h = host_of[e.from as usize];
            let (Some((name, line, col)), true) = (&e.hostname, h != NONE) else {
                continue;
            };
            if aliases[h as usize].is_some() {
                continue;
            }
            if let Some(&other) = alias_of.get(name.as_str()) {
                if other != h {
                    return Err(p.file_err(
                        *line,
                        *col,
                        format!(
                            "hostname `{name}` is given to two hosts, `{}` and `{}`",
                            p.nodes[hosts[other as usize] as usize], p.nodes[e.from as usize]
                        ),
                    ));
                }
            }
            alias_of.insert(name, h);
            aliases[h as usize] = Some(name.clone());
        }
        Ok(aliases)
    }
}

/// Fills the next-hop table of an undirected graph, whose edges are stored as pairs `2i`
/// (as written) and `2i+1` (reversed): for each destination, a breadth-first search from it over
/// the edges listing it orients each of them towards it.
fn undirected_routes(p: &Parser<'_>, hosts: &[u32], host_of: &[u32], next: &mut [u32]) {
    let nh = hosts.len();
    let mut listing: Vec<Vec<u32>> = vec![Vec::new(); nh];
    for (i, e) in p.edges.iter().enumerate().step_by(2) {
        for d in e.dests.iter() {
            if let Some(&dn) = p.node_ids.get(d) {
                if let Some(list) = listing.get_mut(host_of[dn as usize] as usize) {
                    list.push(i as u32);
                }
            }
        }
    }
    let mut adj: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
    let mut seen = HashSet::new();
    let mut queue = std::collections::VecDeque::new();
    for (dh, edges) in listing.iter().enumerate() {
        adj.clear();
        for &i in edges {
            let e = &p.edges[i as usize];
            // Entering `e.to` from `e.from` is link i+1 seen backwards, and vice versa.
            adj.entry(e.to).or_default().push((e.from, i));
            adj.entry(e.from).or_default().push((e.to, i + 1));
        }
        let Some(&dn) = hosts.get(dh) else {
            continue;
        };
        seen.clear();
        queue.clear();
        seen.insert(dn);
        queue.push_back(dn);
        while let Some(v) = queue.pop_front() {
            for &(u, l) in adj.get(&v).map_or(&[][..], Vec::as_slice) {
                if seen.insert(u) {
                    next[u as usize * nh + dh] = l;
                    queue.push_back(u);
                }
            }
        }
    }
}

impl Network for Dot {
    fn describe(&self) -> String {
        format!(
            "dot file {}{} ({} hosts, {} nodes, {} links, routes from edge comments)",
            self.file,
            if self.graph.is_empty() {
                String::new()
            } else {
                format!(", graph `{}`", self.graph)
            },
            self.hosts.len(),
            self.nodes.len(),
            self.links.len()
        )
    }
    fn hosts(&self) -> u32 {
        self.hosts.len() as u32
    }
    fn links(&self) -> &[Link] {
        &self.links
    }
    fn host_name(&self, h: u32) -> String {
        self.hosts
            .get(h as usize)
            .and_then(|&id| self.nodes.get(id as usize))
            .cloned()
            .unwrap_or_else(|| format!("h{h}"))
    }
    fn host_aliases(&self, h: u32) -> Vec<String> {
        self.aliases
            .get(h as usize)
            .and_then(Clone::clone)
            .into_iter()
            .collect()
    }
    fn route(&self, src: u32, dst: u32, out: &mut Vec<u32>) -> Result<(), TopologyError> {
        let n = self.hosts();
        if src >= n || dst >= n {
            return Err(super::no_such_host(src, dst, n));
        }
        let target = self.hosts[dst as usize];
        let mut at = self.hosts[src as usize];
        let start = out.len();
        let mut steps = 0usize;
        while at != target {
            let l = self.next[at as usize * n as usize + dst as usize];
            if l == NONE {
                out.truncate(start);
                return Err(TopologyError::NoRoute {
                    from: self.host_name(src),
                    to: self.host_name(dst),
                    why: format!(
                        "no out-edge of `{}` lists `{}` in its comment",
                        self.nodes[at as usize],
                        self.host_name(dst)
                    ),
                });
            }
            out.push(l);
            at = self.link_to[l as usize];
            steps += 1;
            if steps > self.nodes.len() {
                out.truncate(start);
                return Err(TopologyError::NoRoute {
                    from: self.host_name(src),
                    to: self.host_name(dst),
                    why: format!(
                        "the edge comments loop (more than {} hops)",
                        self.nodes.len()
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_repeating_a_host_stores_it_once() {
        // A million repeats (3 MB): stored once, and shared by the edges of the chain (it took
        // 63× the file's size in memory when every repeat was kept, on every edge).
        let text = format!(
            "digraph g {{ h0 -> s -> h1 [comment=\"{}h1\"]; h1 -> h0 [comment=\"h0\"]; }}",
            "h1, ".repeat(1_000_000)
        );
        let mut p = Parser::new(&text, "rep.dot").unwrap();
        p.graph().unwrap();
        assert_eq!(p.edges.len(), 3);
        assert_eq!(&*p.edges[0].dests, ["h1".to_string()]);
        assert!(Rc::ptr_eq(&p.edges[0].dests, &p.edges[1].dests));
        assert_eq!(p.mentioned.len(), 2);
        let d = Dot::parse(&text, "rep.dot").unwrap();
        let mut r = Vec::new();
        d.route(0, 1, &mut r).unwrap();
        assert_eq!(r, [0, 1]);
    }
}
