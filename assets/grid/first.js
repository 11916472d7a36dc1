/*! gridgate's grid page. Third-party licences: /assets/grid.licenses.txt */
"use strict";(()=>{var l={GridProject:`query GridProject($id: ID!) {
  project(id: $id) {
    id
    name
    version
    tenant {
      id
      name
      __typename
    }
    customFields {
      ...GridField
      __typename
    }
    views {
      ...GridView
      __typename
    }
    __typename
  }
}

fragment GridField on CustomField {
  id
  name
  type
  position
  version
  status
  options {
    id
    label
    color
    position
    __typename
  }
  __typename
}

fragment GridView on View {
  id
  name
  position
  version
  status
  progress {
    scanned
    total
    __typename
  }
  orderBy {
    field
    customFieldId
    direction
    empty
    __typename
  }
  filter
  columns
  __typename
}`,GridIssues:`query GridIssues($id: ID!, $first: Int, $after: String, $last: Int, $before: String, $orderBy: IssueOrder, $filter: IssueFilter) {
  project(id: $id) {
    id
    issues(
      first: $first
      after: $after
      last: $last
      before: $before
      orderBy: $orderBy
      filter: $filter
    ) {
      ...GridConnection
      __typename
    }
    __typename
  }
}

fragment GridConnection on IssueConnection {
  totalCount
  edges {
    cursor
    node {
      ...GridIssue
      __typename
    }
    __typename
  }
  pageInfo {
    hasNextPage
    hasPreviousPage
    startCursor
    endCursor
    __typename
  }
  __typename
}

fragment GridIssue on Issue {
  id
  num
  name
  state
  version
  fieldValues {
    value
    fieldId
    __typename
  }
  __typename
}`,GridViewIssues:`query GridViewIssues($id: ID!, $view: ID!, $first: Int, $after: String, $last: Int, $before: String) {
  project(id: $id) {
    id
    view(id: $view) {
      id
      status
      progress {
        scanned
        total
        __typename
      }
      issues(first: $first, after: $after, last: $last, before: $before) {
        ...GridConnection
        __typename
      }
      __typename
    }
    __typename
  }
}

fragment GridConnection on IssueConnection {
  totalCount
  edges {
    cursor
    node {
      ...GridIssue
      __typename
    }
    __typename
  }
  pageInfo {
    hasNextPage
    hasPreviousPage
    startCursor
    endCursor
    __typename
  }
  __typename
}

fragment GridIssue on Issue {
  id
  num
  name
  state
  version
  fieldValues {
    value
    fieldId
    __typename
  }
  __typename
}`};var E=[{key:"num",label:"Num",type:"NUM",field:null,ref:{field:"NUM"}},{key:"name",label:"Name",type:"NAME",field:null,ref:{field:"NAME"}},{key:"state",label:"State",type:"STATE",field:null,ref:{field:"STATE"}}];function k(e){return{key:e.id,label:e.name,type:e.type,field:e,ref:{field:"CUSTOM_FIELD",customFieldId:e.id}}}function x(e,n){let t=[...e].sort((r,s)=>r.position-s.position);if(n&&n.length>0){let r=new Map(e.map(i=>[i.id,i])),s=n.flatMap(i=>{let a=r.get(i);return a?[k(a)]:[]});return[...E,...s]}return[...E,...t.map(k)]}function $(e){return e.field==="CUSTOM_FIELD"?e.customFieldId??"":e.field.toLowerCase()}function v(e,n){switch(n.type){case"NUM":return String(e.num);case"NAME":return e.name;case"STATE":return e.state;default:return e.fieldValues.find(t=>t.fieldId===n.key)?.value??null}}function O(e,n){let t=v(e,n);switch(n.type){case"CHECKBOX":return{kind:"checkbox",checked:t==="true"};case"SELECT":{if(t==null)return{kind:"empty"};let r=n.field?.options.find(s=>s.id===t);return{kind:"chip",label:r?.label??t,color:r?.color??null}}case"STATE":return{kind:"chip",label:T(e,n),color:t==="OPEN"?"green":"gray"};default:return{kind:"text",text:T(e,n)}}}var ee=["default","gray","brown","orange","yellow","green","blue","purple","pink","red"];function L(e){return e&&e.startsWith("#")?{className:"chip",background:e}:{className:`chip chip-${e&&ee.includes(e)?e:"default"}`,background:null}}function A(e,n){let t=n.findIndex(s=>$(s)===e.key);if(t<0)return{ariaSort:void 0,mark:null};let r=n[t].direction==="ASC";return{ariaSort:t===0?r?"ascending":"descending":void 0,mark:`${r?"▲":"▼"}${n.length>1?t+1:""}`}}function I(e,n){return e.map(t=>`${n.find(r=>r.key===$(t))?.label??"?"} ${t.direction==="ASC"?"ascending":"descending"}`).join(", then ")}var f=32,G=40,F=48,M=4;function P(e){switch(e.type){case"NUM":return 96;case"NAME":return 320;case"CHECKBOX":return 110;default:return 160}}function T(e,n){let t=v(e,n);return t==null?"":n.type==="SELECT"?n.field?.options.find(r=>r.id===t)?.label??t:n.type==="STATE"?t==="OPEN"?"Open":"Closed":t}function j(e){switch(e){case"NUM":return"number";case"NAME":case"TEXT":return"text";case"STATE":return"state";case"INT":return"integer";case"NUMBER":return"decimal";case"DATE":return"date";case"CHECKBOX":return"checkbox";case"SELECT":return"select"}}function y(){return window.__gridgate??={prefetched:[],painted:!1,started:!1,closed:!1},window.__gridgate}function ne(e){return JSON.stringify(e,(n,t)=>t&&typeof t=="object"&&!Array.isArray(t)?Object.fromEntries(Object.entries(t).sort(([r],[s])=>r<s?-1:r>s?1:0)):t)}function w(e,n,t,r){let s={"Content-Type":"application/json",Accept:"application/json"};r&&(s.Authorization=`Bearer ${r}`);let i=fetch("/graphql",{method:"POST",headers:s,body:JSON.stringify({operationName:e,query:n,variables:t})}).then(a=>a.ok?a.json():null).catch(()=>null);return y().prefetched.push({operationName:e,query:n,variables:ne(t),result:i}),i}function R(e){return e.view?{kind:"view",projectId:e.projectId,viewId:e.view}:{kind:"project",projectId:e.projectId,orderBy:e.sort,filter:e.filter}}function D(e){return e.kind==="view"?{id:e.projectId,view:e.viewId}:{id:e.projectId,orderBy:e.orderBy,filter:e.filter}}function U(e,n,t){return{...e,...n==="head"?{first:100,after:t}:{last:100,before:t}}}function H(e,n,t){let r=n?t:e;return{total:r,rowCount:r??e+(n?100:0)}}function B(e,n,t){let r=t?" match":"";return e!=null?`${e.toLocaleString("en")} issue${e===1?"":"s"}${r}`:`at least ${n.toLocaleString("en")} issues${r}`}function V(e){return e?e.and?e.and.length:1:0}var te="gridgate.token";function W(){return sessionStorage.getItem(te)}function re(e){if(!e)return null;let n=e,t=n.startsWith("-")?"DESC":"ASC";n.startsWith("-")&&(n=n.slice(1));let r="LAST";return n.endsWith("~first")&&(r="FIRST",n=n.slice(0,-6)),["num","name","state"].includes(n)?{field:n.toUpperCase(),direction:t,empty:r}:n.length>0?{field:"CUSTOM_FIELD",customFieldId:n,direction:t,empty:r}:null}function q(e){let n=/^\/p\/([^/]+)\/?$/.exec(e.pathname);if(!n)return null;let t=null,r=e.searchParams.get("filter");if(r)try{t=JSON.parse(r)}catch{t=null}let s=n[1];try{s=decodeURIComponent(s)}catch{}return{projectId:s,view:e.searchParams.get("view"),sort:re(e.searchParams.get("sort")),filter:t}}var se=300,X=document.currentScript?.dataset.app??null,K=!1;function m(){if(K||!X)return;K=!0;let e=document.createElement("script");e.src=X,document.body.appendChild(e)}function o(e,n,...t){let r=document.createElement(e);for(let[s,i]of Object.entries(n))i==null||i===!1||(s==="className"?r.className=String(i):r.setAttribute(s,i===!0?"":String(i)));for(let s of t)s===null||s===!1||r.append(s);return r}function ie(e,n){let t=O(e,n);switch(t.kind){case"checkbox":return o("span",{className:"checkbox","aria-label":t.checked?"checked":"not checked"},t.checked?"☑":"☐");case"chip":{let{className:r,background:s}=L(t.color),i=o("span",{className:r},t.label);return s&&(i.style.background=s),i}case"text":return t.text;case"empty":return null}}function oe(e,n,t,r){let s=o("div",{className:"grid-row",role:"row","aria-rowindex":e+2,"aria-selected":"false","data-issue":n.id},o("div",{className:"grid-cell select",role:"gridcell","aria-colindex":1,"data-row":e,"data-col":0},o("span",{className:"checkbox"},"☐")),...t.map((i,a)=>o("div",{className:`grid-cell type-${i.type.toLowerCase()}`,role:"gridcell","aria-colindex":a+2,"aria-readonly":i.type==="NUM"?"true":null,"data-row":e,"data-col":a+1,"data-column":i.key},ie(n,i))));return s.style.transform=`translateY(${e*f}px)`,s.style.height=`${f}px`,J(s,r),s}function J(e,n){let t=e.children;for(let r=0;r<t.length&&r<n.length;r++)t[r].style.width=`${n[r]}px`}function ae(e,n,t){let r=o("div",{className:"grid-row header",role:"row","aria-rowindex":1},o("div",{className:"grid-cell select",role:"columnheader","aria-colindex":1,"data-row":-1,"data-col":0},o("span",{className:"visually-hidden"},"Selected")),...e.map((s,i)=>{let{ariaSort:a,mark:u}=A(s,n);return o("div",{className:"grid-cell columnheader",role:"columnheader","aria-colindex":i+2,"aria-sort":a,"data-row":-1,"data-col":i+1,"data-column":s.key},o("button",{type:"button",className:"sort",title:"Click to sort; Shift-click to add a sort key"},o("span",{className:"label"},s.label),o("span",{className:"type"},j(s.type)),u?o("span",{className:"sorted","aria-hidden":"true"},u):null,s.field?.status==="REINDEXING"?o("span",{className:"muted"}," reindexing…"):null),o("span",{className:"menu "},o("button",{type:"button","aria-label":`Column menu: ${s.label}`,"aria-haspopup":"menu","aria-expanded":"false"},"⋯")),o("span",{className:"resizer","aria-hidden":"true"}))}),o("div",{className:"grid-cell add-column",role:"columnheader","aria-colindex":e.length+2},o("button",{type:"button","aria-label":"Add a column"},"+")));return J(r,t),r}function le(e,n,t,r){let s=[...e.views].sort((i,a)=>i.position-a.position);return o("nav",{className:"tabs","aria-label":"Views"},o("div",{role:"tablist","aria-label":"Views"},o("button",{type:"button",role:"tab","aria-selected":String(n===null)},"All issues"),...s.map(i=>o("span",{className:"tab"},o("button",{type:"button",role:"tab","aria-selected":String(n===i.id),"data-view":i.id,title:`Sorted by ${I(i.orderBy,r)||"num"}${i.filter?", filtered":""}`},o("span",{className:"name"},i.name),n===i.id&&t!=null?o("span",{className:"tab-count"},` ${t.toLocaleString("en")}`):null,i.status==="BUILDING"?o("span",{className:"progress"},` building ${i.progress?`${i.progress.scanned}/${i.progress.total}`:"…"}`):null),o("span",{className:"menu "},o("button",{type:"button","aria-label":`View menu: ${i.name}`,"aria-haspopup":"menu","aria-expanded":"false"},"⋯"))))),o("button",{type:"button",className:"new-view"},"+ Save as view"))}function ue(e,n,t){let r=document.getElementById("root");if(!r||r.childElementCount>0)return;let s=e.view?n.views.find(p=>p.id===e.view)??null:null,i=x(n.customFields,s?.columns??null),a=s?s.orderBy:e.sort?[e.sort]:[],u=s?s.filter:e.filter,d=t.edges,{total:c,rowCount:z}=H(d.length,t.pageInfo.hasNextPage,t.totalCount??null),h=[G,...i.map(P)],C=h.reduce((p,b)=>p+b,0)+F,_=V(u),g=o("div",{className:"grid-body",role:"rowgroup"});g.style.height=`${z*f}px`,g.style.width=`${C}px`;let N=o("div",{className:"grid-header",role:"rowgroup"},ae(i,a,h));N.style.width=`${C}px`;let S=o("div",{className:"grid-scroller",role:"grid","aria-label":`${n.name}: ${s?s.name:"all issues"}`,"aria-rowcount":c!=null?c+1:-1,"aria-colcount":i.length+2,"aria-multiselectable":"true"},N,g),Y=o("div",{className:"grid-page","data-first-paint":!0,inert:!0},o("header",{className:"toolbar"},o("a",{href:"/",className:"home"},"gridgate"),o("h1",{},n.name),o("span",{className:"count",role:"status","aria-live":"polite","data-total":c??""},B(c,d.length,u!=null)),o("span",{className:"spacer"}),o("button",{type:"button","aria-expanded":"false"},`Filter${_>0?` (${_})`:""}`),o("button",{type:"button"},"+ Issue"),o("button",{type:"button",disabled:!0},"Delete"),o("button",{type:"button"},"Jump to end"),o("button",{type:"button"},"Download CSV")),le(n,e.view,c,i),s?o("p",{className:"view-summary"},`Sorted by ${I(s.orderBy,i)||"num"}${s.filter?", filtered":""}.`):null,o("div",{className:"grid-frame"},S));r.append(Y);let Q=Math.ceil(S.clientHeight/f)+M;d.slice(0,Q).forEach((p,b)=>g.append(oe(b,p.node,i,h))),y().painted=!0}function de(e,n,t){if(!n?.data||n.errors||!t?.data||t.errors)return null;let r=n.data.project,s=t.data.project;return!r||!s?null:e.view?r.views.find(a=>a.id===e.view)?.status!=="READY"||s.view?.status!=="READY"?null:{project:r,connection:s.view.issues}:s.issues?{project:r,connection:s.issues}:null}function ce(){let e=q(new URL(window.location.href));if(!e){m();return}let n=R(e),t=W(),r=n.kind==="view"?"GridViewIssues":"GridIssues",s=Promise.all([w("GridProject",l.GridProject,{id:e.projectId},t),w(r,l[r],U(D(n),"head",null),t)]),i=setTimeout(m,se);s.then(([a,u])=>{clearTimeout(i);try{let d=de(e,a,u);d&&!y().started&&ue(e,d.project,d.connection)}finally{requestAnimationFrame(()=>setTimeout(m,0)),setTimeout(m,50)}})}try{ce()}catch(e){console.error(e),m()}})();
