//! What the proxy offers beyond tools, passed on from its upstreams as they give it: their
//! capabilities (the union; with one upstream, exactly its own, less what the proxy cannot
//! relay), their instructions (several upstreams: each one's under its name), and their
//! prompts, resources, resource templates, completions and log levels.
//!
//! One upstream's prompts and resources keep their names. Several upstreams' prompt names,
//! and resource and template names, are named as the catalogue names tools
//! (`agent::function_name` of `server:name`), and two that would share a name are
//! refused, at start and at every listing. A resource is read from the server that listed its
//! URI (or whose template its URI starts as); requests go to the upstream as they came,
//! without rmcp's response cache (a proxy passes on what the server says now).
//!
//! What the proxy offers beyond tools: the upstreams' capabilities (union, less
//! tasks) and instructions; prompts, resources, templates, completion and log levels sent to the
//! right upstream as raw requests (past rmcp's response cache); several upstreams' names
//! namespaced as tools are, a clash refused at start and at each listing.

// Logging and subscriptions are deprecated by the 2026-07-28 protocol (SEP-2577); clients and
// servers of earlier versions use them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::{Result, bail};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientRequest, CompleteRequestParams, CompleteResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsRequest, ListResourceTemplatesRequest,
    ListResourcesRequest, LoggingLevel, PaginatedRequestParams, Prompt, ReadResourceRequestParams,
    ReadResourceResponse, Reference, Resource, ResourceTemplate, ServerCapabilities,
    ServerPeerInfo, ServerResult, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use serde_json::{Map, Value};

use cosmos_engine::agent::function_name;
use cosmos_engine::mcp::McpPool;
use cosmos_engine::mcp::Server;

/// Most pages of one list read from one upstream (a server that pages forever is cut off).
const MOST_PAGES: usize = 100;

/// The capabilities the proxy relays; the rest (tasks, extensions, experimental) an
/// upstream's client could not use through it, so they are not advertised.
const RELAYED: [&str; 5] = ["tools", "prompts", "resources", "completions", "logging"];

/// What the proxy offers, from its upstreams.
pub struct Offer {
    capabilities: ServerCapabilities,
    /// What a client of the handshake era is offered: the same, but for each upstream that
    /// gives such a client a session of its own, what that server says in the handshake era
    /// (a server may offer list changes only over `subscriptions/listen`, say).
    handshake_capabilities: ServerCapabilities,
    instructions: Option<String>,
    /// The one upstream's own `serverInfo` (name, title, version…), passed on as it is; with
    /// several upstreams the proxy names itself.
    server_info: Option<Implementation>,
    /// Several upstreams: names are namespaced.
    namespaced: bool,
    /// Offered prompt name → (server, its own name), as last listed.
    prompts: Mutex<HashMap<String, (String, String)>>,
    /// Resource URI → server, and template (URI up to its first `{`) → server, as last listed.
    resources: Mutex<Routes>,
    /// How long an upstream may take to answer a request that is no tool call (the proxy's
    /// call timeout).
    wait: std::time::Duration,
}

#[derive(Default)]
struct Routes {
    uris: HashMap<String, String>,
    templates: Vec<(String, String)>,
}

impl Offer {
    /// The offer of `pool`'s servers (none: tools only, as simulate mode with `--tools-from`
    /// has); `handshake` holds the same servers as a client of that era reaches them, where
    /// that is over a session of its own. Several upstreams' prompts and resources are listed
    /// now, so a clash of names refuses the start.
    pub async fn of(
        pool: Option<&McpPool>,
        handshake: Option<&McpPool>,
        wait: std::time::Duration,
    ) -> Result<Self> {
        let servers = pool.map(McpPool::servers).unwrap_or_default();
        let introductions: Vec<(String, Arc<ServerPeerInfo>)> = servers
            .iter()
            .filter_map(|s| s.introduction().map(|i| (s.name.clone(), i)))
            .collect();
        let in_handshake = handshake.map(McpPool::servers).unwrap_or_default();
        let handshake_introductions: Vec<Arc<ServerPeerInfo>> = introductions
            .iter()
            .map(|(name, shared)| {
                in_handshake
                    .iter()
                    .find(|s| &s.name == name)
                    .and_then(|s| s.introduction())
                    .unwrap_or_else(|| shared.clone())
            })
            .collect();
        let offer = Self {
            capabilities: union(introductions.iter().map(|(_, i)| &i.capabilities)),
            handshake_capabilities: union(handshake_introductions.iter().map(|i| &i.capabilities)),
            instructions: instructions(&introductions),
            server_info: match &introductions[..] {
                [(_, only)] if servers.len() == 1 => only.server_info.clone(),
                _ => None,
            },
            namespaced: servers.len() > 1,
            prompts: Mutex::default(),
            resources: Mutex::default(),
            wait,
        };
        if offer.namespaced && pool.is_some() {
            if let Err(e) = offer.list_prompts(&servers).await {
                bail!("the upstreams' prompts: {}", e.message);
            }
            if let Err(e) = offer.list_resources(&servers).await {
                bail!("the upstreams' resources: {}", e.message);
            }
        }
        Ok(offer)
    }

    /// The capabilities the proxy advertises (to a client of the stateless era).
    pub fn capabilities(&self) -> ServerCapabilities {
        self.capabilities.clone()
    }

    /// The capabilities the proxy advertises to a client of the handshake era.
    pub fn handshake_capabilities(&self) -> ServerCapabilities {
        self.handshake_capabilities.clone()
    }

    /// The one upstream's `serverInfo`, when the proxy fronts one server.
    pub fn server_info(&self) -> Option<Implementation> {
        self.server_info.clone()
    }

    /// The upstreams' instructions.
    pub fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    /// A name as the client sees it.
    fn offered(&self, server: &str, name: &str) -> String {
        if self.namespaced {
            function_name(&format!("{server}:{name}"))
        } else {
            name.to_string()
        }
    }

    /// Every upstream's prompts, named as offered.
    pub async fn list_prompts(&self, pool: &[Arc<Server>]) -> Result<Vec<Prompt>, McpError> {
        let mut offered = Vec::new();
        let mut names = HashMap::new();
        for server in with(pool, |c| c.prompts.is_some()) {
            let prompts = self
                .all_pages(&server, |p| {
                    ClientRequest::ListPromptsRequest(ListPromptsRequest {
                        params: p,
                        ..Default::default()
                    })
                })
                .await?
                .into_iter()
                .flat_map(|r| match r {
                    ServerResult::ListPromptsResult(r) => r.prompts,
                    _ => Vec::new(),
                });
            for mut prompt in prompts {
                let name = self.offered(&server.name, &prompt.name);
                let own = std::mem::replace(&mut prompt.name, name.clone());
                if names
                    .insert(name.clone(), (server.name.clone(), own))
                    .is_some()
                {
                    return Err(clash("prompts", &name));
                }
                offered.push(prompt);
            }
        }
        *self.prompts.lock().unwrap_or_else(|p| p.into_inner()) = names;
        Ok(offered)
    }

    /// The server of an offered prompt name and the prompt's own name there (listing again
    /// once when the name is not known: the upstream may have added it).
    async fn prompt(
        &self,
        pool: &[Arc<Server>],
        name: &str,
    ) -> Result<(Arc<Server>, String), McpError> {
        if !self.namespaced
            && let [only] = with(pool, |c| c.prompts.is_some()).as_slice()
        {
            return Ok((only.clone(), name.to_string()));
        }
        for listed in [false, true] {
            if listed {
                self.list_prompts(pool).await?;
            }
            let found = self
                .prompts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(name)
                .cloned();
            if let Some((server, own)) = found
                && let Some(server) = pool.iter().find(|s| s.name == server).cloned()
            {
                return Ok((server, own));
            }
        }
        Err(McpError::invalid_params(
            format!("no upstream offers a prompt named {name}"),
            None,
        ))
    }

    /// `prompts/get`, from the prompt's server (named beside the answer when it was found).
    pub async fn get_prompt(
        &self,
        pool: &[Arc<Server>],
        mut params: GetPromptRequestParams,
        asker: &Asker<'_>,
    ) -> (Option<String>, Result<GetPromptResponse, McpError>) {
        let (server, own) = match self.prompt(pool, &params.name).await {
            Ok(found) => found,
            Err(e) => return (None, Err(e)),
        };
        params.name = own;
        let answer = match self
            .ask(
                &server,
                ClientRequest::GetPromptRequest(request(params)),
                Some(asker),
            )
            .await
        {
            Ok(ServerResult::GetPromptResult(r)) => Ok(GetPromptResponse::Complete(r)),
            Ok(ServerResult::InputRequiredResult(r)) => Ok(GetPromptResponse::InputRequired(r)),
            Ok(_) => Err(unexpected(&server)),
            Err(e) => Err(e),
        };
        (Some(server.name.clone()), answer)
    }

    /// Every upstream's resources, named as offered, their URIs as the servers gave them.
    pub async fn list_resources(&self, pool: &[Arc<Server>]) -> Result<Vec<Resource>, McpError> {
        let mut offered = Vec::new();
        let mut names = HashMap::new();
        let mut uris = HashMap::new();
        for server in with(pool, |c| c.resources.is_some()) {
            let resources = self
                .all_pages(&server, |p| {
                    ClientRequest::ListResourcesRequest(ListResourcesRequest {
                        params: p,
                        ..Default::default()
                    })
                })
                .await?
                .into_iter()
                .flat_map(|r| match r {
                    ServerResult::ListResourcesResult(r) => r.resources,
                    _ => Vec::new(),
                });
            for mut resource in resources {
                resource.name = self.offered(&server.name, &resource.name);
                if names.insert(resource.name.clone(), ()).is_some() {
                    return Err(clash("resources", &resource.name));
                }
                if let Some(other) = uris.insert(resource.uri.clone(), server.name.clone())
                    && other != server.name
                {
                    return Err(McpError::internal_error(
                        format!(
                            "cosmos proxy: {other} and {} both offer the resource {}",
                            server.name, resource.uri
                        ),
                        None,
                    ));
                }
                offered.push(resource);
            }
        }
        self.routes().uris = uris;
        Ok(offered)
    }

    /// Every upstream's resource templates, named as offered.
    pub async fn list_resource_templates(
        &self,
        pool: &[Arc<Server>],
    ) -> Result<Vec<ResourceTemplate>, McpError> {
        let mut offered = Vec::new();
        let mut routes = Vec::new();
        for server in with(pool, |c| c.resources.is_some()) {
            let templates = self
                .all_pages(&server, |p| {
                    ClientRequest::ListResourceTemplatesRequest(ListResourceTemplatesRequest {
                        params: p,
                        ..Default::default()
                    })
                })
                .await?
                .into_iter()
                .flat_map(|r| match r {
                    ServerResult::ListResourceTemplatesResult(r) => r.resource_templates,
                    _ => Vec::new(),
                });
            for mut template in templates {
                template.name = self.offered(&server.name, &template.name);
                let stem = template
                    .uri_template
                    .split('{')
                    .next()
                    .unwrap_or_default()
                    .to_string();
                routes.push((stem, server.name.clone()));
                offered.push(template);
            }
        }
        // The longest stem first: the most particular template wins.
        routes.sort_by_key(|(stem, _)| std::cmp::Reverse(stem.len()));
        self.routes().templates = routes;
        Ok(offered)
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.resources.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The server a resource URI is read from.
    pub async fn resource_server(
        &self,
        pool: &[Arc<Server>],
        uri: &str,
    ) -> Result<Arc<Server>, McpError> {
        let holders = with(pool, |c| c.resources.is_some());
        if let [only] = holders.as_slice() {
            return Ok(only.clone());
        }
        for listed in [false, true] {
            if listed {
                self.list_resources(pool).await?;
                self.list_resource_templates(pool).await?;
            }
            let found = {
                let routes = self.routes();
                routes.uris.get(uri).cloned().or_else(|| {
                    routes
                        .templates
                        .iter()
                        .find(|(stem, _)| !stem.is_empty() && uri.starts_with(stem.as_str()))
                        .map(|(_, server)| server.clone())
                })
            };
            if let Some(server) = found.and_then(|n| holders.iter().find(|s| s.name == n)) {
                return Ok(server.clone());
            }
        }
        Err(McpError::resource_not_found(
            format!("no upstream offers the resource {uri}"),
            None,
        ))
    }

    /// `resources/read`, from the resource's server (named beside the answer when found).
    pub async fn read_resource(
        &self,
        pool: &[Arc<Server>],
        params: ReadResourceRequestParams,
        asker: &Asker<'_>,
    ) -> (Option<String>, Result<ReadResourceResponse, McpError>) {
        let server = match self.resource_server(pool, &params.uri).await {
            Ok(server) => server,
            Err(e) => return (None, Err(e)),
        };
        let answer = match self
            .ask(
                &server,
                ClientRequest::ReadResourceRequest(request(params)),
                Some(asker),
            )
            .await
        {
            Ok(ServerResult::ReadResourceResult(r)) => Ok(ReadResourceResponse::Complete(r)),
            Ok(ServerResult::InputRequiredResult(r)) => Ok(ReadResourceResponse::InputRequired(r)),
            Ok(_) => Err(unexpected(&server)),
            Err(e) => Err(e),
        };
        (Some(server.name.clone()), answer)
    }

    /// `resources/subscribe` or `resources/unsubscribe`, at the resource's server.
    pub async fn subscribe(
        &self,
        pool: &[Arc<Server>],
        uri: &str,
        on: bool,
        asker: &Asker<'_>,
    ) -> Result<(), McpError> {
        let server = self.resource_server(pool, uri).await?;
        let asked = if on {
            ClientRequest::SubscribeRequest(request(SubscribeRequestParams::new(uri)))
        } else {
            ClientRequest::UnsubscribeRequest(request(UnsubscribeRequestParams::new(uri)))
        };
        self.ask(&server, asked, Some(asker)).await.map(|_| ())
    }

    /// `completion/complete`, from the server of the prompt or resource it names.
    pub async fn complete(
        &self,
        pool: &[Arc<Server>],
        mut params: CompleteRequestParams,
        asker: &Asker<'_>,
    ) -> Result<CompleteResult, McpError> {
        let server = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let (server, own) = self.prompt(pool, &prompt.name).await?;
                prompt.name = own;
                server
            }
            Reference::Resource(resource) => self.resource_server(pool, &resource.uri).await?,
            _ => {
                return Err(McpError::invalid_params(
                    "cosmos proxy: a completion for a kind of reference it does not know",
                    None,
                ));
            }
        };
        match self
            .ask(
                &server,
                ClientRequest::CompleteRequest(request(params)),
                Some(asker),
            )
            .await?
        {
            ServerResult::CompleteResult(r) => Ok(r),
            _ => Err(unexpected(&server)),
        }
    }

    /// `subscriptions/listen` (the stateless era), relayed: the same filter asked of every
    /// upstream that takes it, and what each sends on its subscription passed to the client's
    /// (as far as rmcp's sink lets through what the client was acknowledged), until the client
    /// cancels or every upstream ends its own.
    pub async fn listen(
        &self,
        pool: &[Arc<Server>],
        context: rmcp::service::SubscriptionContext,
    ) -> Result<(), McpError> {
        let wanted = context.accepted().clone();
        let stop = context.request_context().ct.clone();
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let mut listening = 0;
        for server in pool {
            let mut subscription = match server.peer().listen(wanted.clone()).await {
                Ok(subscription) => subscription,
                Err(e) => {
                    tracing::info!("{} takes no subscription: {e}", server.name);
                    continue;
                }
            };
            listening += 1;
            let (tx, stop) = (tx.clone(), stop.clone());
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = stop.cancelled() => break,
                        next = subscription.next() => match next {
                            Ok(Some(notification)) => {
                                if tx.send(notification).await.is_err() {
                                    break;
                                }
                            }
                            _ => break,
                        },
                    }
                }
            });
        }
        drop(tx);
        if listening == 0 {
            // Nothing will come; the subscription stays open as the client asked.
            stop.cancelled().await;
            return Ok(());
        }
        loop {
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                next = rx.recv() => match next {
                    Some(notification) => {
                        if let Err(e) = context.sink().send(notification).await {
                            tracing::debug!("a subscription's notification was not passed on: {e}");
                        }
                    }
                    // Every upstream ended its subscription: so does the proxy.
                    None => return Ok(()),
                },
            }
        }
    }

    /// `logging/setLevel` at every upstream that logs.
    pub async fn set_level(
        &self,
        pool: &[Arc<Server>],
        level: LoggingLevel,
    ) -> Result<(), McpError> {
        for server in with(pool, |c| c.logging.is_some()) {
            let asked = ClientRequest::SetLevelRequest(request(SetLevelRequestParams::new(level)));
            self.ask(&server, asked, None).await?;
        }
        Ok(())
    }
}

/// The union of upstreams' capabilities, of those the proxy relays; tools always (the proxy
/// serves them in every mode). A flag (`listChanged`, `subscribe`) is on when any upstream's is.
fn union<'a>(each: impl Iterator<Item = &'a ServerCapabilities>) -> ServerCapabilities {
    let mut merged = Map::new();
    merged.insert("tools".into(), Value::Object(Map::new()));
    for capabilities in each {
        let Ok(Value::Object(wire)) = serde_json::to_value(capabilities) else {
            continue;
        };
        for (key, value) in wire
            .into_iter()
            .filter(|(k, _)| RELAYED.contains(&k.as_str()))
        {
            let slot = merged
                .entry(key)
                .or_insert_with(|| Value::Object(Map::new()));
            if let (Value::Object(slot), Value::Object(flags)) = (slot, value) {
                for (flag, on) in flags {
                    let was = slot.get(&flag).and_then(Value::as_bool).unwrap_or(false);
                    slot.insert(flag, Value::Bool(was || on.as_bool().unwrap_or(false)));
                }
            }
        }
    }
    serde_json::from_value(Value::Object(merged)).unwrap_or_default()
}

/// One upstream's instructions as it gave them; several upstreams' each under its name.
fn instructions(introductions: &[(String, Arc<ServerPeerInfo>)]) -> Option<String> {
    let given: Vec<(&str, &str)> = introductions
        .iter()
        .filter_map(|(name, i)| i.instructions.as_deref().map(|t| (name.as_str(), t)))
        .collect();
    match (introductions.len(), given.as_slice()) {
        (_, []) => None,
        (1, [(_, text)]) => Some(text.to_string()),
        _ => Some(
            given
                .iter()
                .map(|(name, text)| format!("## {name}\n\n{text}"))
                .collect::<Vec<_>>()
                .join("\n\n"),
        ),
    }
}

/// The live servers whose capabilities `has` accepts.
fn with(pool: &[Arc<Server>], has: impl Fn(&ServerCapabilities) -> bool) -> Vec<Arc<Server>> {
    pool.iter()
        .filter(|s| s.introduction().is_some_and(|i| has(&i.capabilities)))
        .cloned()
        .collect()
}

/// A request carrying `params`.
fn request<M: Default, P>(params: P) -> rmcp::model::Request<M, P> {
    rmcp::model::Request::new(params)
}

/// The error for two upstreams that offer the same `what` under one `name`.
fn clash(what: &str, name: &str) -> McpError {
    McpError::internal_error(
        format!("cosmos proxy: two upstreams' {what} would both be offered as \"{name}\""),
        None,
    )
}

fn unexpected(server: &Server) -> McpError {
    McpError::internal_error(
        format!(
            "server {} answered with another kind of result",
            server.name
        ),
        None,
    )
}

/// The client a request is asked for: while its request is at a server, what that server says
/// outside the answer (a log, a request for input) is told to this client, and only the server
/// asked counts it as asking (`clients::Clients::calling`).
pub struct Asker<'a> {
    /// Where requests in flight are noted.
    pub clients: &'a super::clients::Clients,
    /// The client asking.
    pub client: Arc<super::clients::Client>,
    /// Its request's `_meta` (its capabilities, log level, extensions), passed upstream with
    /// the request.
    pub meta: Option<rmcp::model::RequestMetaObject>,
}

/// Asking upstreams.
impl Offer {
    /// Asks `server` for `asker` (when a client asks), waiting at most the proxy's call timeout
    /// (then the request is cancelled there and the client told).
    async fn ask(
        &self,
        server: &Server,
        request: ClientRequest,
        asker: Option<&Asker<'_>>,
    ) -> Result<ServerResult, McpError> {
        let _asking = asker.map(|a| a.clients.calling(&server.name, a.client.clone()));
        let meta = asker.and_then(|a| a.meta.clone());
        server
            .ask(request, self.wait, meta)
            .await
            .map_err(|e| match e {
                rmcp::ServiceError::McpError(e) => e,
                other => McpError::internal_error(format!("server {}: {other}", server.name), None),
            })
    }

    /// Every page of a list, read from `server` (at most [`MOST_PAGES`]).
    async fn all_pages(
        &self,
        server: &Server,
        page: impl Fn(Option<PaginatedRequestParams>) -> ClientRequest,
    ) -> Result<Vec<ServerResult>, McpError> {
        let mut pages = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MOST_PAGES {
            let params = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let result = self.ask(server, page(params), None).await?;
            cursor = match &result {
                ServerResult::ListPromptsResult(r) => r.next_cursor.clone(),
                ServerResult::ListResourcesResult(r) => r.next_cursor.clone(),
                ServerResult::ListResourceTemplatesResult(r) => r.next_cursor.clone(),
                _ => None,
            };
            pages.push(result);
            if cursor.is_none() {
                break;
            }
        }
        Ok(pages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn capabilities(wire: Value) -> ServerCapabilities {
        serde_json::from_value(wire).unwrap()
    }

    #[test]
    fn one_upstreams_capabilities_pass_as_they_are_less_what_cannot_be_relayed() {
        let everything = capabilities(json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "logging": {},
            "completions": {},
            "experimental": {"x": {}}
        }));
        let offered = serde_json::to_value(union([&everything].into_iter())).unwrap();
        assert_eq!(
            offered,
            json!({
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
                "logging": {},
                "completions": {}
            })
        );
    }

    #[test]
    fn several_upstreams_capabilities_are_their_union() {
        let a = capabilities(json!({"tools": {}, "resources": {"subscribe": true}}));
        let b = capabilities(json!({"prompts": {}, "resources": {"listChanged": true}}));
        let offered = serde_json::to_value(union([&a, &b].into_iter())).unwrap();
        assert_eq!(
            offered,
            json!({
                "tools": {},
                "prompts": {},
                "resources": {"subscribe": true, "listChanged": true}
            })
        );
        let none = serde_json::to_value(union(std::iter::empty())).unwrap();
        assert_eq!(none, json!({"tools": {}}));
    }
}
